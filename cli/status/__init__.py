"""The `gpu-insights status` command: what a deployment sees now."""
