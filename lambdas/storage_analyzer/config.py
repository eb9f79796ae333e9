"""The storage analyzer's environment: one declaration, read by its handler at cold start and
built from the deployment's settings by its construct and by the demo
(cdk/function_configs.py)."""

from dataclasses import dataclass

from lambdas.shared.config import NAMES, TEXT, WHOLE, FunctionConfig, choice, variable
from lambdas.shared.shards import LOOKBACK_DAYS, STORAGE_SHARD_VOLUMES
from lambdas.storage_analyzer.aws import VolumeScope


@dataclass(frozen=True, kw_only=True)
class StorageConfig(FunctionConfig):
    cluster_name: str = variable("CLUSTER_NAME", TEXT)
    #: Where findings (and, under the fleet state machine, shards) are written.
    report_bucket: str = variable("REPORT_BUCKET", TEXT)
    volume_scope: VolumeScope = variable(
        "VOLUME_SCOPE", choice(VolumeScope), default=VolumeScope.CLUSTER
    )
    #: S3 buckets whose request metrics are read (the storage_buckets setting).
    buckets: tuple[str, ...] = variable("BUCKETS", NAMES, default=())
    lookback_days: int = variable("LOOKBACK_DAYS", WHOLE, default=LOOKBACK_DAYS)
    #: Volumes per shard of the fleet state machine's plan.
    shard_volumes: int = variable("SHARD_VOLUMES", WHOLE, default=STORAGE_SHARD_VOLUMES)
    event_bus: str = variable("EVENT_BUS", TEXT, default="default")
    #: The function's failure queue, where findings S3 refuses are kept (its construct's).
    failure_queue_url: str | None = variable("FAILURE_QUEUE_URL", TEXT, default=None)
