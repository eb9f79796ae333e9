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
from gpu_insights_agent.contract.serving import SERVERS, Server, Signal, serving_metric

#: Models each server's rows named in the window: server -> signal -> model label values.
Seen = Mapping[Server, Mapping[Signal, frozenset[str]]]

#: Where each server's series come from, and what turns them on.
ENABLE: Final[Mapping[Server, str]] = {
    Server.VLLM: (
        "vLLM's /metrics on port 8000, which the add-on collects in OTel mode (Ray Serve LLM's "
        "ray_vllm_* from add-on 8.0.0); in Classic mode serving_metrics=true"
    ),
    Server.NIM: "NIM's /v1/metrics on port 8000, scraped with serving_metrics=true",
    Server.TRITON: "Triton's metrics on port 8002 (--allow-metrics), scraped with "
    "serving_metrics=true",
    Server.RAY_SERVE: "Ray's metrics port 8080 on KubeRay's pods, collected from add-on 8.0.0",
}
#: A signal a server exports only when asked (triton-inference-server/server
#: docs/user_guide/metrics.md: the first-response histogram with ``histogram_latencies``).
ENABLE_SIGNAL: Final[Mapping[tuple[Server, Signal], str]] = {
    (Server.TRITON, Signal.TTFT): "start Triton with --metrics-config histogram_latencies=true",
}
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
    seen: Seen, targeted: Iterable[str], signals: Sequence[Signal] = ALARM_SIGNALS
) -> list[Missing]:
    """Every (model, signal) an alarm reads with no series, in server then model order."""
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
        enable = "enable its server's metrics: " + "; ".join(
            f"{s}: {how}" for s, how in ENABLE.items()
        )
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
