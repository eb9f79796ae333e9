"""Whether each inference server's series reach CloudWatch in a deployment's mode, and what to
enable where they do not: the one judgement behind ``preflight``'s ``serving-data-path`` line
(before a deploy: every server of the serving table, contract/serving.py ``SERVERS``) and
``status``'s ``serving-series`` line (after: what to enable for a model no server names). An
SLO alarm over a server whose series have no path stays OK forever, so the line names it.

The paths, by mode (the add-on's configuration as this project writes it:
cdk/constructs/addon_configuration.py):

- OTel: the add-on collects vLLM itself ("vLLM metrics collection is enabled by default",
  "Collecting vLLM metrics with OTel Container Insights",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-eks-otel-vllm.html)
  and Ray, Ray Serve LLM's ``ray_vllm_*`` among its series, from "Version 8.0.0 or later of the
  amazon-cloudwatch-observability add-on", unless ``otelContainerInsights.solutions.ray.enabled``
  or ``otelContainerInsights.solutions.enabled`` is false ("Collecting Ray metrics with OTel
  Container Insights", container-insights-eks-otel-ray.html). Triton and NIM only through this
  project's Prometheus receiver in the add-on's ``agent.otelConfig``
  (cdk/node_config/serving_otel.py), which ``serving_metrics`` adds.
- Classic: every server through the agent's Prometheus scrape (``agent.prometheus``,
  cdk/node_config/serving_prometheus.py), which ``serving_metrics`` adds; its counters and
  gauges only (the agent drops histograms).

Where the stack installs the add-on, its configuration is this project's; where the add-on is
managed elsewhere (``install_addon=false``), its own configuration values say whether the scrape
was given to it.
"""

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cdk.node_config.serving_otel import ADDON_COLLECTED, RECEIVER
from gpu_insights_agent.contract.serving import SERVERS, Server
from lambdas.shared.container_insights_mode import ContainerInsightsMode, at_least

#: The first add-on version that collects Ray (module docstring).
RAY_MIN_ADDON_VERSION: Final = "v8.0.0-eksbuild.1"
#: The setting that adds the scrape of the servers the add-on does not collect itself.
SCRAPE_SETTING: Final = "-c serving_metrics=true"


@dataclass(frozen=True)
class DataPath:
    """How one server's series reach CloudWatch; ``via`` None where they do not, ``enable``
    then what would give them a path."""

    server: Server
    via: str | None
    enable: str = ""

    def line(self) -> str:
        """``nim (port 8000 /v1/metrics): no path in ... (deploy with ...)``."""
        row = SERVERS[self.server]
        served = f"{self.server} (port {row.port} {row.path})"
        if self.via is not None:
            return f"{served}: {self.via}"
        return f"{served}: no path ({self.enable})"


def scrape_configured(values: Mapping[str, Any], mode: ContainerInsightsMode) -> bool:
    """Whether the add-on's configuration ``values`` (its chart values, as DescribeAddon's
    ``configurationValues`` gives them) hold this project's serving scrape in ``mode``: the
    receiver in ``agent.otelConfig`` (OTel), the agent's ``agent.prometheus`` (Classic)."""
    agent = values.get("agent")
    if not isinstance(agent, Mapping):
        return False
    if mode is ContainerInsightsMode.CLASSIC:
        return isinstance(agent.get("prometheus"), Mapping)
    otel = agent.get("otelConfig")
    receivers = otel.get("receivers") if isinstance(otel, Mapping) else None
    return isinstance(receivers, Mapping) and RECEIVER in receivers


def _solution_off(values: Mapping[str, Any], solution: str) -> bool:
    """``otelContainerInsights.solutions.enabled`` or ``...solutions.<solution>.enabled``
    false in ``values``."""
    otel = values.get("otelContainerInsights")
    solutions = otel.get("solutions") if isinstance(otel, Mapping) else None
    if not isinstance(solutions, Mapping):
        return False
    own = solutions.get(solution)
    return solutions.get("enabled") is False or (
        isinstance(own, Mapping) and own.get("enabled") is False
    )


def data_paths(
    mode: ContainerInsightsMode,
    *,
    scraped: bool,
    addon_version: str | None = None,
    values: Mapping[str, Any] | None = None,
) -> tuple[DataPath, ...]:
    """Each server's path in ``mode``, in the table's order. ``scraped``: the add-on carries
    this project's serving scrape (``serving_metrics``, or ``scrape_configured``);
    ``addon_version``: the add-on the cluster runs or will run (None: not known); ``values``:
    its configuration values, where known."""
    paths = []
    for server in SERVERS:
        if mode is ContainerInsightsMode.CLASSIC:
            via = "the agent's Prometheus scrape (counters and gauges)" if scraped else None
            paths.append(DataPath(server, via, f"deploy with {SCRAPE_SETTING}"))
        elif server not in ADDON_COLLECTED:
            via = "this project's Prometheus receiver in the add-on" if scraped else None
            paths.append(DataPath(server, via, f"deploy with {SCRAPE_SETTING}"))
        elif server is Server.RAY_SERVE:
            paths.append(_ray(addon_version, values or {}))
        else:
            paths.append(DataPath(server, "the add-on's own collection, on by default"))
    return tuple(paths)


def _ray(addon_version: str | None, values: Mapping[str, Any]) -> DataPath:
    server = Server.RAY_SERVE
    if _solution_off(values, "ray"):
        return DataPath(
            server,
            None,
            "turn otelContainerInsights.solutions.ray.enabled (and solutions.enabled) back on "
            "in the add-on's configuration values",
        )
    if addon_version is None:
        return DataPath(
            server, f"the add-on's own collection, from {RAY_MIN_ADDON_VERSION} (version unknown)"
        )
    if at_least(addon_version, RAY_MIN_ADDON_VERSION):
        return DataPath(server, f"the add-on's own collection ({addon_version})")
    return DataPath(
        server,
        None,
        f"update the add-on from {addon_version} to {RAY_MIN_ADDON_VERSION} or later "
        "(-c addon_version=...)",
    )


def running_paths(
    mode: ContainerInsightsMode,
    *,
    serving_metrics: bool,
    configuration_values: str | None = None,
    from_values: bool = False,
    addon_version: str | None = None,
) -> tuple[DataPath, ...]:
    """Each server's path on the add-on the cluster runs or will run: with ``from_values`` (an
    add-on installed, whoever manages it), its own ``configuration_values`` say whether the
    scrape is there; otherwise the stack installs it with ``serving_metrics``' configuration.
    Values that are not JSON (only a person writes YAML by hand) hold no scrape this reads."""
    values: Any = {}
    if from_values and configuration_values and configuration_values.strip():
        try:
            values = json.loads(configuration_values)
        except json.JSONDecodeError:
            values = {}
    if not isinstance(values, Mapping):
        values = {}
    scraped = scrape_configured(values, mode) if from_values else serving_metrics
    paths = data_paths(mode, scraped=scraped, addon_version=addon_version, values=values)
    if not from_values:
        return paths
    given = "agent.prometheus" if mode is ContainerInsightsMode.CLASSIC else "agent.otelConfig"
    enable = (
        f"give the add-on this project's configuration values (its {given}, written with "
        f"{SCRAPE_SETTING})"
    )
    return tuple(
        DataPath(p.server, None, enable) if p.via is None and SCRAPE_SETTING in p.enable else p
        for p in paths
    )


def without_path(paths: Iterable[DataPath]) -> list[DataPath]:
    return [p for p in paths if p.via is None]
