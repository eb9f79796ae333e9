"""The storage analyzer: EBS volumes and S3 buckets that starve GPUs or cost money for nothing."""
