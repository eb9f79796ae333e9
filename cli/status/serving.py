"""``status``'s serving check: every model whose series an SLO alarm reads do not arrive. An
alarm over a model with no series stays OK (PromQL returns nothing for it), so a model is named
with its server and what to enable, from the serving table (contract/serving.py).

A model is one a server's requests counter names in the window (by the server's model label),
or one the settings give its own latency target. For each alarm that reads it per model
(time to first token, end-to-end latency where it has a target, requests waiting, KV cache),
a model named by a server's requests but absent from that signal's series is named; so is a
signal the server has no metric for (Ray Serve has no time to first token: the alarm cannot
watch it), and a model with its own target that no server names.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from cli.preflight.checks import Check, Verdict
from cli.serving_paths import DataPath, data_paths
from gpu_insights_agent.contract.serving import SERVERS, Server, Signal, serving_metric
from lambdas.shared.container_insights_mode import ContainerInsightsMode

#: Models each server's rows named in the window: server -> signal -> model label values.
Seen = Mapping[Server, Mapping[Signal, frozenset[str]]]

#: A signal a server exports only when asked (triton-inference-server/server
#: docs/user_guide/metrics.md: the first-response histogram with ``histogram_latencies``).
ENABLE_SIGNAL: Final[Mapping[tuple[Server, Signal], str]] = {
    (Server.TRITON, Signal.TTFT): "start Triton with --metrics-config histogram_latencies=true",
}
#: The servers' paths where the serving alarms are deployed (OTel mode) with the project's
#: default ``serving_metrics``: what status names for a model without a server's series.
OTEL_PATHS: Final = data_paths(ContainerInsightsMode.OTEL, scraped=True)
#: The signals the SLO alarms read per model or replica (cdk/alarms/serving_promql.py).
ALARM_SIGNALS: Final = (Signal.TTFT, Signal.E2E, Signal.WAITING, Signal.KV_CACHE)


@dataclass(frozen=True)
class Missing:
    model: str
    #: None: no server names the model.
    server: Server | None
    signal: Signal
    enable: str

    def line(self) -> str:
        where = f"{self.server}" if self.server is not None else "no server"
        return f"{self.model!r} ({where}): no {self.signal.value} series; {self.enable}"


def missing_series(
    seen: Seen,
    targeted: Iterable[str],
    signals: Sequence[Signal] = ALARM_SIGNALS,
    paths: Sequence[DataPath] = OTEL_PATHS,
) -> list[Missing]:
    """Every (model, signal) an alarm reads with no series, in server then model order; a
    model no server names with each server's data path (``paths``, cli/serving_paths.py)."""
    found: list[Missing] = []
    named: set[str] = set()
    for server in SERVERS:
        by_signal = seen.get(server, {})
        models = sorted(by_signal.get(Signal.REQUESTS, frozenset()))
        named.update(models)
        for model in models:
            for signal in signals:
                row = serving_metric(server, signal)
                if row is None:
                    found.append(Missing(model, server, signal, f"{server} exports no such metric"))
                elif model not in by_signal.get(signal, frozenset()):
                    enable = ENABLE_SIGNAL.get(
                        (server, signal), f"{server} sends no {row.names[0]} for it"
                    )
                    found.append(Missing(model, server, signal, enable))
    for model in sorted(set(targeted) - named):
        enable = "its server's series: " + "; ".join(p.line() for p in paths)
        found.append(Missing(model, None, Signal.REQUESTS, enable))
    return found


def check_serving_series(missing: Sequence[Missing], *, unreadable: str | None = None) -> Check:
    name = "serving-series"
    if unreadable is not None:
        return Check(name, Verdict.FAIL, f"could not read: {unreadable}", "run with read access")
    if not missing:
        return Check(name, Verdict.OK, "every model the serving alarms read sends their series")
    shown = "; ".join(m.line() for m in missing[:8])
    more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
    return Check(
        name,
        Verdict.WARN,
        f"{len(missing)} model signal(s) without series, their alarms silent: {shown}{more}",
        "enable what each line names, or drop the model's own target",
    )
