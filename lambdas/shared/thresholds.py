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
