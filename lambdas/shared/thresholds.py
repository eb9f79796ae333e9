"""The default of every threshold a deployment can set, once: the settings (cdk/settings.py),
the alarm catalog (cdk/alarms/catalog.py) and the Lambda functions that apply the same line
(the training analyzer's GPU-hour attribution) import them from here, where Lambda code may
read them (Lambda code never imports cdk/)."""

from typing import Final

#: A GPU in use drawing under this share of its power limit is not working: the low-power
#: alarm's threshold and the line between a GPU-hour held working and held without work.
LOW_POWER_PERCENT: Final = 30.0
#: Minutes a GPU in use must stay under ``LOW_POWER_PERCENT`` before the low-power alarm pages.
LOW_POWER_WINDOW_MINUTES: Final = 60
#: Minutes a GPU must throttle (thermal or power brake) before its throttling alarm pages.
THROTTLE_WINDOW_MINUTES: Final = 30
#: Under this mean SM activity a held GPU-hour does no work, whatever the GPU draws.
IDLE_SM_ACTIVE_PERCENT: Final = 10.0
#: A serving replica with more than this many requests waiting: the serving-requests-waiting
#: alarm's line (cdk/alarms/serving_promql.py), and a day's ``serving_saturated`` finding's.
SERVING_WAITING_REQUESTS: Final = 10
#: Preempted requests, as percent of a day's requests, over which a deployment is saturated:
#: vLLM preempts requests "when KV cache space is insufficient to handle all batched requests"
#: and recomputes them later ("Optimization and Tuning", Preemption,
#: https://docs.vllm.ai/en/latest/configuration/optimization/), so more than one in a hundred
#: means the cache is the limit most of the day, not in a burst.
SERVING_PREEMPTION_PERCENT: Final = 1.0
#: A day's mean KV-cache use (percent of its blocks) a replica is sized for: under it, with
#: room for the day's peak hours at over twice the day's mean (a reasoned default; set it to
#: your own traffic's peak over mean). Replicas needed = replicas x mean / target.
SERVING_KV_TARGET_PERCENT: Final = 40.0
#: Under this day's mean KV-cache use, with GPUs under ``LOW_POWER_PERCENT`` and no request
#: ever waiting, a deployment's replicas are over-provisioned: half the target.
SERVING_KV_LOW_PERCENT: Final = SERVING_KV_TARGET_PERCENT / 2
#: Serving drift (lambdas/training_analyzer/serving/drift, docs/drift.md): the share of a
#: model's days on unchanged traffic that may raise a drift finding. Split evenly over the
#: day's tests (24 hours and the whole day, per signal: Bonferroni), each test's false-alarm
#: rate is this over their number; half the 1% the project promises, for the benchmark's
#: sampling error (benchmarks/serving_drift.py measures it).
DRIFT_FALSE_ALARMS_PER_MODEL_DAY: Final = 0.005
#: A significant shift is reported only where it is large enough to act on: a length or
#: quality histogram whose mean moved by this fraction, or whose bins' total variation
#: distance is this (at tens of thousands of requests an hour, a 2% change is significant
#: and of no interest).
DRIFT_MIN_EFFECT: Final = 0.1
#: A finish reason's share moved when it is this many times larger or smaller than the
#: baseline's and moved by at least ``DRIFT_MIN_SHARE_POINTS`` percentage points.
DRIFT_MIN_SHARE_RATIO: Final = 1.5
DRIFT_MIN_SHARE_POINTS: Final = 0.5
#: Weeks of the same hours a baseline sums (a shift that lasts this long is the new normal).
DRIFT_BASELINE_WEEKS: Final = 4
