"""What EKS GPU Insights runs in the cluster: the training emitter, the NVML exporter, the EMF
documents both send, and the metric contract. It imports nothing outside itself (a test holds
that), so it installs alone, into a training image on Python 3.9+."""
