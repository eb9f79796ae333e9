"""The realistic cluster model: a GPU cluster on EKS as AWS and Kubernetes really make it, for
the tests, the demo and the benchmarks to draw from instead of the project's own reading.

- ``pods``: pods as their controllers name them (Job, CronJob, Deployment, StatefulSet,
  DaemonSet, PyTorchJob, MPIJob, JobSet, RayJob, bare pods), with the owner reference the
  CloudWatch agent reads.
- ``container_insights``: the Container Insights series the agent emits in Classic enhanced
  mode: ``PodName`` by owner kind, ``FullPodName``, the ``pod_gpu_*`` and ``node_gpu_*``
  dimension sets of the agent's translator.
- ``otel``: the OTel mode's DCGM metric names and labels (data only).
- ``nodes``: node names and labels as each provisioning path sets them (managed node groups,
  Karpenter, EKS Auto Mode, self-managed; NVIDIA GPU feature discovery, the GPU Operator, Node
  Feature Discovery).
- ``volumes``: EBS volumes with their creation and attach times, as DescribeVolumes returns them.

Every fact cites its source beside it (repository, path and commit or function; or the page).
Plain data and pure functions: nothing here calls AWS.
"""
