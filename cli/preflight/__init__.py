"""The `gpu-insights preflight` command: checks before a deploy."""
