"""The ``gpu-insights`` command line: the hands-on face of the code the Lambdas run."""
