"""Each inference server's data path in a mode (cli/serving_paths.py), the judgement ``preflight``
and ``status`` share, read from the add-on's configuration values as this project writes them
(cdk/constructs/addon_configuration.py): Triton and NIM reach CloudWatch in OTel mode only
through the receiver ``serving_metrics`` adds, Ray Serve from add-on 8.0.0 (AWS's Ray page),
every server in Classic mode only through the agent's scrape."""

import json

from cdk.constructs.addon_configuration import ObservabilityAddonConfiguration
from cli.serving_paths import data_paths, running_paths, without_path
from gpu_insights_agent.contract.serving import Server
from lambdas.shared.container_insights_mode import ContainerInsightsMode

OTEL, CLASSIC = ContainerInsightsMode.OTEL, ContainerInsightsMode.CLASSIC


def _values(mode: ContainerInsightsMode, serving_metrics: bool) -> str:
    """The add-on's configuration values as the stack gives them to EKS."""
    return ObservabilityAddonConfiguration.for_gpu_cluster(
        cluster_name="train",
        container_logs=True,
        tolerate_all_taints=True,
        gpu_taint_keys=(),
        mode=mode,
        serving_metrics=serving_metrics,
    ).to_json()


def _missing(paths: object) -> list[Server]:
    return [p.server for p in without_path(paths)]  # type: ignore[arg-type]


def test_in_otel_mode_triton_and_nim_have_a_path_only_through_the_receiver() -> None:
    scraped = data_paths(OTEL, scraped=True, addon_version="v8.1.0-eksbuild.1")
    assert _missing(scraped) == []
    bare = data_paths(OTEL, scraped=False, addon_version="v8.1.0-eksbuild.1")
    assert _missing(bare) == [Server.NIM, Server.TRITON]
    (nim, triton) = without_path(bare)
    assert nim.line() == (
        "nim-llm (port 8000 /v1/metrics): no path (deploy with -c serving_metrics=true)"
    )
    assert triton.line().startswith("triton (port 8002 /metrics): no path")


def test_ray_serve_is_collected_from_addon_8_and_not_where_its_solution_is_off() -> None:
    old = data_paths(OTEL, scraped=True, addon_version="v6.4.0-eksbuild.1")
    assert _missing(old) == [Server.RAY_SERVE]
    assert "update the add-on from v6.4.0-eksbuild.1 to v8.0.0-eksbuild.1" in old[-1].enable
    assert _missing(data_paths(OTEL, scraped=True, addon_version="v8.0.0-eksbuild.1")) == []
    unknown = data_paths(OTEL, scraped=True)
    assert _missing(unknown) == []
    assert "version unknown" in str(unknown[-1].via)
    off = {"otelContainerInsights": {"enabled": True, "solutions": {"ray": {"enabled": False}}}}
    assert _missing(
        data_paths(OTEL, scraped=True, addon_version="v8.1.0-eksbuild.1", values=off)
    ) == [Server.RAY_SERVE]


def test_in_classic_mode_every_server_needs_the_scrape() -> None:
    assert _missing(data_paths(CLASSIC, scraped=True)) == []
    assert _missing(data_paths(CLASSIC, scraped=False)) == list(Server)


def test_an_addon_managed_elsewhere_is_read_from_its_own_configuration_values() -> None:
    """The stack's own values with serving_metrics hold the scrape in each mode; without it, or
    with values that are not this project's, Triton and NIM (OTel) or every server (Classic)
    have none, whatever the settings say."""
    for mode in (OTEL, CLASSIC):
        given = running_paths(
            mode,
            serving_metrics=False,
            configuration_values=_values(mode, serving_metrics=True),
            from_values=True,
            addon_version="v8.1.0-eksbuild.1",
        )
        assert _missing(given) == [], mode
    otel = running_paths(
        OTEL,
        serving_metrics=True,
        configuration_values=_values(OTEL, serving_metrics=False),
        from_values=True,
        addon_version="v8.1.0-eksbuild.1",
    )
    assert _missing(otel) == [Server.NIM, Server.TRITON]
    assert "give the add-on this project's configuration values (its agent.otelConfig" in (
        otel[1].enable
    )
    for values in ("agent: {}", json.dumps({"agent": {"otelConfig": "x"}}), None):
        classic = running_paths(
            CLASSIC, serving_metrics=True, configuration_values=values, from_values=True
        )
        assert _missing(classic) == list(Server), values
    # Installed by the stack: the settings' scrape.
    assert _missing(running_paths(OTEL, serving_metrics=False)) == [Server.NIM, Server.TRITON]
