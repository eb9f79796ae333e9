"""The `gpu-insights demo` command: a week of a small GPU cluster on moto."""
