"""The `gpu-insights cost-estimate` command and the price table it uses."""
