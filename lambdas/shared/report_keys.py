"""Where the training analyzer leaves each day's tables in the report bucket, for the weekly
report to read and the analyzer's role to be allowed to write (cdk/stacks/analyzers_stack.py):
one layout for the function that writes, the one that reads and the policy between them."""

from datetime import date
from typing import Final

#: Each day's job costs.
JOB_COSTS_KEY: Final = "reports/cluster={cluster}/date={day}/training-jobs.json"
#: Each day's GPU-hour attribution, keyed by the UTC day it covers (the weekly report's waste
#: section reads the week's seven).
GPU_HOURS_KEY: Final = "reports/cluster={cluster}/date={day}/gpu-hours.json"


def job_costs_key(cluster: str, day: date) -> str:
    return JOB_COSTS_KEY.format(cluster=cluster, day=day.isoformat())


def gpu_hours_key(cluster: str, day: date) -> str:
    return GPU_HOURS_KEY.format(cluster=cluster, day=day.isoformat())


#: Each day's failed runs of training jobs, with their causes and signatures (the weekly
#: report's failures section reads the week's and groups them).
FAILURES_KEY: Final = "reports/cluster={cluster}/date={day}/training-failures.json"


def failures_key(cluster: str, day: date) -> str:
    return FAILURES_KEY.format(cluster=cluster, day=day.isoformat())


#: Each day's goodput of every training job (lambdas/training_analyzer/goodput), keyed by the
#: UTC day it covers, the GPU-hour attribution's: the weekly report adds up the week's seven.
GOODPUT_KEY: Final = "reports/cluster={cluster}/date={day}/goodput.json"


def goodput_key(cluster: str, day: date) -> str:
    return GOODPUT_KEY.format(cluster=cluster, day=day.isoformat())
