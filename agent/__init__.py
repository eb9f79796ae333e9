"""What runs on or for GPU nodes: CloudWatch agent configuration and the metric contract."""
