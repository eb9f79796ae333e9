"""What a serving reading is of: one model of one workload, on one of its replicas."""

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class ModelKey:
    """One model of one workload."""

    namespace: str
    workload: str
    kind: str
    model: str


@dataclass(frozen=True, order=True)
class ReplicaKey:
    """One model on one replica (pod) of a workload."""

    model: ModelKey
    pod: str
