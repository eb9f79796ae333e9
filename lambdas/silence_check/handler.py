"""Lambda entry point of the silence check, on an EventBridge schedule (every
``SCHEDULE_MINUTES``).

Each run compares the cluster's running GPU instances (EC2) with the GPUs the exporter sent a
sample for in the look back (CloudWatch), publishes one ``gpu_silent`` series per silent GPU or
node and the cluster's counts, and logs the silent ones by name. The ``gpu-silent`` alarm pages
on the first, through the notifier; ``gpu-silence-check`` pages when the cluster's count stops,
so a check that fails or stops running is not mistaken for a quiet cluster.

Its environment is declared in lambdas/silence_check/config.py and read at cold start.
"""

import logging
from typing import Any

from lambdas.shared.aws_clients import ClientCache
from lambdas.shared.events import scheduled_time
from lambdas.silence_check.aws import gpu_nodes, publish, reported_gpus
from lambdas.silence_check.config import SilenceCheckConfig
from lambdas.silence_check.silence import find_silent

log = logging.getLogger()
log.setLevel(logging.INFO)
_clients = ClientCache()


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    config = SilenceCheckConfig.current()
    now = scheduled_time(event).timestamp()
    cluster = config.cluster_name
    nodes = gpu_nodes(_clients("ec2"), cluster, config.architectures)
    reported, listed = reported_gpus(
        _clients("cloudwatch"), cluster, now=now, lookback_s=config.lookback_s
    )
    check = find_silent(nodes, reported, listed, now=now, grace_s=config.grace_s)
    published = publish(_clients("cloudwatch"), cluster, check, now)
    for silent in check.silent:
        log.warning("silent for %d s or more: %s", config.lookback_s, silent.line())
    return {
        "expected_nodes": check.expected_nodes,
        "expected_gpus": check.expected_gpus,
        "young_nodes": check.young_nodes,
        "silent_nodes": check.silent_nodes,
        "silent_gpus": check.silent_gpus,
        "silent": [s.line() for s in check.silent],
        "published": published,
    }
