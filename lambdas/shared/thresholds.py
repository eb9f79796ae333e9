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
