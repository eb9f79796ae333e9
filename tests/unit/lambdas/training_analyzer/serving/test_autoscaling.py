"""A serving workload's findings read together, hour by hour (serving/autoscaling.py): saturated
at its peaks and over-provisioned off-peak is one ``serving_autoscaling`` finding, priced,
never "add replicas" beside an idle replica of the same Deployment.

The demo's serving week (cli/demo/serving.py ``week_load``) goes through the analyzer's pure
functions as plain data: its hours as the serving reads and the GPU-hour attribution would
have them, each day's findings made as the training analyzer makes them. Priced at H100's
$6.88 a GPU-hour (the demo's); a month is 730 hours, 30.4167 days: one replica's GPU-hour every
day of a month is 6.88 x 30.4167 = $209.2667."""

from collections import defaultdict
from datetime import UTC, datetime

import pytest

from cli.demo.realistic.pods import Pod
from cli.demo.realistic.serving import (
    GPU_OF,
    IDLE_REPLICA,
    KSERVE,
    KSERVE_ISVC,
    NAMESPACE,
    NODE,
    SERVING_PODS,
    VLLM,
    workload_of,
)
from cli.demo.serving import GENERATION_TOKENS, PROMPT_TOKENS, SATURATED_DAY, week_load
from cli.demo.week import DAYS, THIS_WEEK
from lambdas.shared.findings import Finding, Kind
from lambdas.shared.thresholds import SERVING_KV_TARGET_PERCENT, SERVING_WAITING_REQUESTS
from lambdas.training_analyzer.gpu_hours.attribution import GpuHour, GpuKey, Hold, attribute
from lambdas.training_analyzer.gpu_hours.by_workload import by_workload
from lambdas.training_analyzer.gpu_hours.findings import held_not_working
from lambdas.training_analyzer.serving.analysis import (
    ServingReads,
    serving_findings,
    serving_rows,
)
from lambdas.training_analyzer.serving.autoscaling import (
    WorkloadHour,
    scaling_day,
    workload_hours,
)
from lambdas.training_analyzer.serving.keys import ModelKey, ReplicaKey
from lambdas.weekly_report.actions import week_actions
from lambdas.weekly_report.waste import week_waste

PRICE = 6.88
MONTH_OF_A_REPLICA_HOUR_A_DAY = PRICE * 730 / 24
VLLM_RESOURCE = f"namespace/{NAMESPACE}/Deployment/{VLLM.deployment}"


def _hour(hour: int, replicas: int, kv: float, waiting: float, idle: int = 0) -> WorkloadHour:
    return WorkloadHour(hour, replicas, kv, waiting, tuple(f"idle-{i}" for i in range(idle)))


def test_peaks_saturated_and_nights_spare_call_for_an_autoscaler() -> None:
    # 4 replicas: 8 peak hours at 95% KV each with 25 waiting (need max(ceil(380/40), 5) = 10),
    # 16 night hours at 10% each (ceil(40/40) = 1 needed, 3 spare).
    hours = [_hour(h, 4, 380.0, 25.0) for h in range(8)]
    hours += [_hour(h, 4, 40.0, 0.0) for h in range(8, 24)]
    day = scaling_day(hours, waiting_requests=10, kv_target_percent=40.0)
    assert day is not None
    assert day.calls_for_autoscaling
    assert (day.fewest, day.most) == (1, 10)
    assert (day.saturated_hours, day.spare_hours) == (8, 16)
    assert (day.spare_replica_hours, day.lacking_replica_hours) == (48, 48)
    assert day.held_replica_hours == 96


def test_a_day_saturated_throughout_needs_replicas_not_an_autoscaler() -> None:
    day = scaling_day(
        [_hour(h, 3, 198.0, 30.0, idle=1) for h in range(24)],
        waiting_requests=10,
        kv_target_percent=40.0,
    )
    assert day is not None
    assert day.idle_while_saturated == ("idle-0",)
    assert (day.fewest, day.most) == (5, 5)
    assert not day.calls_for_autoscaling


def test_a_day_never_saturated_is_left_to_the_other_findings() -> None:
    day = scaling_day(
        [_hour(h, 3, 90.0 if 9 <= h < 18 else 40.0, 0.0) for h in range(24)],
        waiting_requests=10,
        kv_target_percent=40.0,
    )
    assert day is not None
    # Peak hours need ceil(90 / 40) = 3 of 3; the 15 night hours 1 of 3.
    assert day.spare_replica_hours == 30
    assert not day.calls_for_autoscaling


def test_an_hour_without_every_replicas_kv_cache_is_not_sized() -> None:
    model = ModelKey("serving", "chat", "Deployment", "llama")
    a, b = ReplicaKey(model, "a"), ReplicaKey(model, "b")
    hours = workload_hours(
        {model: {0: {"a", "b"}, 3600: {"a", "b"}}},
        {a: {0: 0.5, 3600: 0.25}, b: {3600: 0.0}},
        {a: {0: 12.0, 3600: 0.0}, b: {3600: 0.0}},
    )
    # The first hour lacks b's reading; the second sizes both, b serving nothing.
    assert hours == {("serving", "chat", "Deployment"): [WorkloadHour(3600, 2, 25.0, 0.0, ("b",))]}


# --- The demo's serving week, as plain data ----------------------------------------------------


def _workload(pod: Pod) -> tuple[str, str]:
    """(kind, name) as the attribution names a replica's workload from its pod labels
    (gpu_hours/workloads.py ``serving_controller``)."""
    return ("InferenceService", KSERVE_ISVC) if pod in KSERVE.pods else ("Deployment", pod.workload)


def _demo_day(day: int) -> tuple[list[Finding], list[Finding]]:
    """The serving findings and the idle-GPU findings of one day of the demo's week."""
    start = int(THIS_WEEK.start) + day * 86_400
    reads = ServingReads()
    gpu_hours, holds = [], []
    hourly_kv: dict[ReplicaKey, dict[int, float]] = defaultdict(dict)
    hourly_waiting: dict[ReplicaKey, dict[int, float]] = defaultdict(dict)
    hourly_replicas: dict[ModelKey, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for pod in SERVING_PODS:
        kind, name = _workload(pod)
        model = ModelKey(NAMESPACE, name, kind, workload_of(pod).model)
        replica = ReplicaKey(model, pod.name)
        loads = [week_load(pod, day * 24 + h) for h in range(24)]
        reads.requests[replica] = sum(load.requests for load in loads)
        reads.prompt_tokens[replica] = reads.requests[replica] * PROMPT_TOKENS
        reads.generation_tokens[replica] = reads.requests[replica] * GENERATION_TOKENS
        reads.preemptions[replica] = 0.0
        reads.kv_cache[replica] = sum(load.kv_cache for load in loads) / 24
        reads.waiting[replica] = max(load.waiting for load in loads)
        gpu = GpuKey(NODE.name, str(GPU_OF[pod]))
        for h, load in enumerate(loads):
            at = start + h * 3600
            hourly_kv[replica][at] = load.kv_cache
            hourly_waiting[replica][at] = load.waiting
            hourly_replicas[model][at].add(pod.name)
            gpu_hours.append(GpuHour(gpu=gpu, hour=at, power_utilization=load.power_percent,
                                     in_use=True))  # fmt: skip
            holds.append(Hold(gpu=gpu, hour=at, namespace=NAMESPACE, pod=pod.name, share=1.0,
                              power_utilization=load.power_percent, controller=name,
                              controller_kind=kind))  # fmt: skip
    reads.replicas = {
        m: max(len(p) for p in hours.values()) for m, hours in hourly_replicas.items()
    }
    attribution = attribute(gpu_hours, holds)
    rows = serving_rows(reads, by_workload(attribution, holds), PRICE)
    served = serving_findings(
        rows,
        day=datetime.fromtimestamp(start, UTC).date(),
        gpu_hour_usd=PRICE,
        hours=workload_hours(hourly_replicas, hourly_kv, hourly_waiting),
    )
    idle = held_not_working(attribution, gpu_hour_usd=PRICE, window_hours=24, window_start=start)
    return served, idle


@pytest.fixture(scope="module")
def week() -> dict[int, tuple[list[Finding], list[Finding]]]:
    return {day: _demo_day(day) for day in range(DAYS)}


def test_the_demo_weeks_findings_of_one_deployment_agree(
    week: dict[int, tuple[list[Finding], list[Finding]]],
) -> None:
    for day, (served, idle) in week.items():
        # The idle replica, every day, on its Deployment, with serving advice.
        (replica,) = idle
        assert replica.resource == VLLM_RESOURCE, day
        assert replica.evidence["pods"] == sorted(p.name for p in VLLM.pods)
        assert replica.estimated_monthly_waste_usd == pytest.approx(5022.40)
        assert "notebook" not in replica.recommendation
        assert "finished" not in replica.recommendation
        # No "add replicas" while a replica of the same Deployment is idle.
        assert not [f for f in served if f.kind == Kind.SERVING_SATURATED], day
        for finding in served:
            assert not finding.recommendation.startswith("Add"), day
        assert [f.kind for f in served] == ([Kind.SERVING_AUTOSCALING] if day == SATURATED_DAY
                                            else []), day  # fmt: skip


def test_the_demo_weeks_saturated_day_is_an_autoscaling_finding_priced_both_ways(
    week: dict[int, tuple[list[Finding], list[Finding]]],
) -> None:
    (finding,), _ = week[SATURATED_DAY]
    day = datetime.fromtimestamp(THIS_WEEK.start + SATURATED_DAY * 86_400, UTC).date()
    assert finding.resource == VLLM_RESOURCE
    e = finding.evidence
    # Working hours (09:00-18:00): two replicas at 99% KV cache (198% of one) and 30 waiting,
    # over the line of 10: ceil(198 / 40) = 5 needed, 3 held, 2 lacking a hour for 9 hours.
    # Night (15 hours): 2 x 20% = 40%, ceil(40 / 40) = 1 needed, 2 spare a hour, one of them the
    # idle replica (its GPU-hours the idle GPU finding's).
    assert SERVING_WAITING_REQUESTS == 10
    assert SERVING_KV_TARGET_PERCENT == 40.0
    assert (e["replicas_needed_fewest"], e["replicas_needed_most"]) == (1, 5)
    assert e["replicas_needed_by_hour"]["09:00"] == 5
    assert e["replicas_needed_by_hour"]["03:00"] == 1
    assert (e["saturated_hours"], e["spare_hours"]) == (9, 15)
    assert (e["spare_replica_hours"], e["spare_idle_replica_hours"]) == (30, 15)
    assert e["lacking_replica_hours"] == 18
    assert e["idle_while_saturated"] == [IDLE_REPLICA.name]
    assert e["idle_while_saturated_replica_hours"] == 9
    # One A10G a replica: 72 GPU-hours over 72 replica-hours.
    assert e["gpus_per_replica"] == 1.0
    assert e["gpu_hours_saved_per_day"] == 30.0
    assert e["monthly_saving_usd"] == pytest.approx(30 * MONTH_OF_A_REPLICA_HOUR_A_DAY, abs=0.01)
    assert e["monthly_saving_usd"] == pytest.approx(6278.00)
    assert e["monthly_cost_of_peak_replicas_usd"] == pytest.approx(3766.80)
    # Its waste is the spare hours of the replicas that served: the idle one's are priced once,
    # by the idle GPU finding it links.
    assert finding.estimated_monthly_waste_usd == pytest.approx(3139.00)
    assert finding.related == (f"gpu_held_not_working {VLLM_RESOURCE}",)
    assert finding.summary == (
        f"{VLLM.deployment} (Deployment) in {NAMESPACE} on {day} held up to 3 replicas while its "
        "hours needed 1 to 5: saturated in 9 hours (up to 30 requests waiting at a replica), 30 "
        "replica-hours more than needed in 15 other hours; 1 of its replicas served nothing in 9 "
        "replica-hours while requests waited at the others"
    )
    assert finding.recommendation.startswith(
        f"First find why {IDLE_REPLICA.name} got no requests while the others queued"
    )
    assert (
        f"Autoscale {VLLM.deployment} between 1 and 5 replicas with a KEDA ScaledObject"
        in finding.recommendation
    )
    assert "vllm:num_requests_waiting" in finding.recommendation
    assert "frees 30 GPU-hours a day off-peak (about $6,278 a month)" in finding.recommendation
    assert "the 18 replica-hours they lacked (about $3,767 a month)" in finding.recommendation


def test_the_autoscaling_findings_estimate_is_a_figure_its_advice_states(
    week: dict[int, tuple[list[Finding], list[Finding]]],
) -> None:
    """Its $3,139 a month is the spare hours of the replicas that served (15 a day), said so
    beside the $6,278 of all 30 freed hours (the idle replica's 15 priced by its idle GPU
    finding) and the $3,767 the peaks lack; net, autoscaling saves 12 replica-hours a day,
    $2,511.20 a month."""
    (finding,), _ = week[SATURATED_DAY]
    estimate = finding.estimated_monthly_waste_usd
    assert estimate == pytest.approx(15 * MONTH_OF_A_REPLICA_HOUR_A_DAY, abs=0.01)
    assert f"${estimate:,.0f} a month of it replicas that served more than the hour needed " in (
        finding.recommendation
    )
    assert (
        "(this finding's waste; the other $3,139 replicas that served nothing, priced as held "
        "without work by gpu_held_not_working)" in finding.recommendation
    )
    assert finding.evidence["waste_gpu_hours_per_day"] == 15.0
    assert finding.evidence["monthly_net_saving_usd"] == pytest.approx(
        12 * MONTH_OF_A_REPLICA_HOUR_A_DAY, abs=0.01
    )
    assert "(about $3,767 a month): about $2,511 a month saved net." in finding.recommendation


def test_a_day_saturated_throughout_beside_an_idle_replica_routes_to_it_first() -> None:
    """Saturated all day: more replicas, not an autoscaler; but the idle one is named first."""
    model = ModelKey("serving", "chat", "Deployment", "llama")
    pods = ["chat-7c9b4d6f8-x2v9k", "chat-7c9b4d6f8-q8hzt", "chat-7c9b4d6f8-b5wlm"]
    keys = [ReplicaKey(model, pod) for pod in pods]
    busy = {k: 0.0 if k.pod == pods[2] else 0.99 for k in keys}
    queue = {k: 0.0 if k.pod == pods[2] else 30.0 for k in keys}
    hours = range(0, 24 * 3600, 3600)
    reads = ServingReads(
        requests={k: 0.0 if k.pod == pods[2] else 864_000.0 for k in keys},
        generation_tokens={k: 0.0 if k.pod == pods[2] else 1.7e8 for k in keys},
        kv_cache=busy,
        waiting=queue,
        replicas={model: 3},
    )
    rows = serving_rows(reads, {}, PRICE)
    (finding,) = serving_findings(
        rows,
        day=datetime(2026, 11, 30, tzinfo=UTC).date(),
        gpu_hour_usd=PRICE,
        hours=workload_hours(
            {model: {h: set(pods) for h in hours}},
            {k: dict.fromkeys(hours, v) for k, v in busy.items()},
            {k: dict.fromkeys(hours, v) for k, v in queue.items()},
        ),
    )
    assert finding.kind == Kind.SERVING_SATURATED
    # The day's mean: (99 + 99 + 0) / 3 = 66% on 3 replicas, 3 x 66 / 40 = 4.95: 5, 2 to add.
    assert finding.recommendation.startswith(
        f"First find why {pods[2]} got no requests while the others queued (its readiness, "
        "the router's or Service's endpoints): it is paid for. Then add 2 replicas ("
    )


def test_the_weeks_action_prices_the_autoscaling_findings_own_share_once(
    week: dict[int, tuple[list[Finding], list[Finding]]],
) -> None:
    (finding,), _ = week[SATURATED_DAY]
    (action,) = week_actions({}, [], [finding.to_dict()])
    assert action["title"] == (
        f"{VLLM_RESOURCE}: replicas fixed: saturated at its peaks, spare off-peak"
    )
    # The one day it was found, a day of the $3,139.00 a month the idle GPU finding does not
    # price: 15 GPU-hours, not a week at that day's pace (105).
    assert (action["gpu_hours"], action["usd"]) == (15.0, 103.2)
    assert action["what_to_do"] == finding.recommendation


def test_the_deployments_actions_price_each_of_its_gpu_hours_once(
    week: dict[int, tuple[list[Finding], list[Finding]]],
) -> None:
    """The Deployment's week as the attribution holds it (504 GPU-hours, the idle replica's
    168 not working) with every day's findings: its held-without-work action prices those 168,
    its autoscaling action the 15 GPU-hours of replicas that served but were not needed on the
    day it was found, among the 336 working ones; the two add up within what it held."""
    row = {"namespace": NAMESPACE, "job": VLLM.deployment, "kind": "Deployment",
           "held_gpu_hours": 504.0, "working_gpu_hours": 336.0, "not_working_gpu_hours": 168.0,
           "waste_usd": 168 * PRICE, "inferred": True}  # fmt: skip
    waste = week_waste({"2026-12-03": {"jobs": [row], "namespaces": [row]}}, gpu_hour_usd=PRICE)
    every = [f.to_dict() for day in week.values() for findings in day for f in findings]
    latest = {(f["kind"], f["resource"]): f for f in every}
    actions = {
        a["finding"].split()[0]: a for a in week_actions(waste, [], [*latest.values()], every)
    }
    held, scaling = actions["gpu_held_not_working"], actions["serving_autoscaling"]
    assert (held["gpu_hours"], held["usd"]) == (168.0, 1155.84)
    assert (scaling["gpu_hours"], scaling["usd"]) == (15.0, 103.2)
    assert held["gpu_hours"] + scaling["gpu_hours"] <= row["held_gpu_hours"]
    assert scaling["gpu_hours"] <= row["working_gpu_hours"]
    assert scaling["evidence"].startswith(
        "15.0 GPU-hours on the 1 day(s) it was found (2026-12-03): replicas that served more "
        "than the hour needed, held and working; its replicas that served nothing are held "
        "without work"
    )


def test_the_autoscaling_action_prices_at_most_the_workloads_working_hours(
    week: dict[int, tuple[list[Finding], list[Finding]]],
) -> None:
    """Found on two days (15 GPU-hours each) of a Deployment whose replicas worked 20
    GPU-hours of the week: it prices those 20, never hours the attribution did not see work in."""
    (finding,), _ = week[SATURATED_DAY]
    days = [finding.to_dict(), finding.to_dict()]
    days[1]["evidence"] = {**days[1]["evidence"], "day": "2026-12-04"}
    row = {
        "namespace": NAMESPACE,
        "job": VLLM.deployment,
        "kind": "Deployment",
        "held_gpu_hours": 30.0,
        "working_gpu_hours": 20.0,
        "not_working_gpu_hours": 10.0,
    }
    waste = week_waste({"2026-12-03": {"jobs": [row], "namespaces": [row]}}, gpu_hour_usd=PRICE)
    both = week_actions({"all_jobs": [], "gpu_hour_usd": PRICE}, [], [days[1]], days)
    assert [(a["gpu_hours"], a["usd"]) for a in both] == [(30.0, 206.4)]
    actions = week_actions(waste, [], [days[1]], days)
    (scaling,) = [a for a in actions if a["finding"] == f"serving_autoscaling {VLLM_RESOURCE}"]
    assert (scaling["gpu_hours"], scaling["usd"]) == (20.0, 137.6)
