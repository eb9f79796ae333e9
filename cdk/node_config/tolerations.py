"""The taints the add-on's agents and the GPU exporter tolerate: one rule for both, from the
``tolerate_all_taints`` and ``gpu_taint_keys`` settings.

The add-on's chart tolerates every taint by default: its values' root ``tolerations`` are
``- operator: Exists`` (amazon-cloudwatch-observability's values.yaml, "Provide default
tolerations"; tests/data/amazon-cloudwatch-observability-values.yaml), and a toleration with no
key and ``Exists`` "matches all keys, values and effects which means this will tolerate
everything" (Kubernetes API reference, Toleration, ``key``:
https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#scheduling).
With ``tolerate_all_taints`` the exporter tolerates the same, so that a GPU node with a taint
of any other key runs the exporter beside the add-on's agents; without it, both tolerate only
the ``gpu_taint_keys``.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, kw_only=True)
class Toleration:
    """A Kubernetes toleration; no key with ``Exists`` tolerates every taint."""

    key: str | None = None
    operator: str = "Exists"
    effect: str | None = None

    def to_dict(self) -> dict[str, str]:
        values = {"key": self.key, "operator": self.operator, "effect": self.effect}
        return {name: value for name, value in values.items() if value is not None}


TOLERATE_ALL: Final = (Toleration(),)


def taint_tolerations(
    *, tolerate_all_taints: bool, gpu_taint_keys: Sequence[str]
) -> tuple[Toleration, ...]:
    """Every taint with ``tolerate_all_taints``; else each of the GPU taint keys (any value or
    effect)."""
    if tolerate_all_taints:
        return TOLERATE_ALL
    return tuple(Toleration(key=key) for key in gpu_taint_keys)
