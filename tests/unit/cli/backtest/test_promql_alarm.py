"""The PromQL alarm's contributor state machine, as "PromQL alarms" documents it
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-promql.html): ALARM after a
contributor breaches continuously for PendingPeriod, OK after it is absent for RecoveryPeriod,
the alarm in ALARM while any contributor is. Evaluated every 60 s as the GPU alarms are."""

from cdk.alarms.catalog import AlarmSettings, promql_alarms
from cli.backtest.promql_alarm import (
    ALARM,
    OK,
    ContributorStates,
    Transition,
    contributor,
    evaluation_times,
    report,
)

GPU3 = contributor({"@resource.k8s.node.name": "ip-10-0-1-7.ec2.internal", "gpu": "3"})
GPU5 = contributor({"@resource.k8s.node.name": "ip-10-0-1-7.ec2.internal", "gpu": "5"})
EVERY = 60


def run(
    states: ContributorStates, minutes: int, returned: dict[int, list[tuple[tuple[str, str], ...]]]
) -> list[Transition]:
    """Evaluations at minute 0, 1, ... ``minutes - 1``; ``returned`` by minute."""
    out: list[Transition] = []
    for at in evaluation_times(0, minutes * 60, EVERY):
        out += states.evaluate(at, returned.get(int(at // 60), []))
    return out


def test_a_gpu_breaching_for_four_minutes_does_not_alarm_with_a_five_minute_pending_period() -> (
    None
):
    states = ContributorStates(pending_period_s=300, recovery_period_s=300)
    # Returned at minutes 0..4: breaching for 240 s at the last of them.
    assert run(states, 10, {m: [GPU3] for m in range(5)}) == []
    assert states.alarm_state == OK


def test_a_gpu_breaching_for_five_minutes_alarms_at_the_fifth() -> None:
    states = ContributorStates(pending_period_s=300, recovery_period_s=300)
    # Returned at minutes 0..5: 300 s of breaching at minute 5.
    assert run(states, 6, {m: [GPU3] for m in range(6)}) == [Transition(300, GPU3, ALARM)]
    assert states.alarm_state == ALARM
    assert states.in_alarm() == [GPU3]


def test_a_gap_in_the_breach_restarts_the_pending_period() -> None:
    states = ContributorStates(pending_period_s=300, recovery_period_s=300)
    # Minutes 0..3 breaching, minute 4 absent, 5..10 breaching: ALARM at 10 (300 s after 5).
    returned = {m: [GPU3] for m in (*range(4), *range(5, 11))}
    assert run(states, 11, returned) == [Transition(600, GPU3, ALARM)]


def test_recovery_after_the_gpu_is_absent_for_the_recovery_period() -> None:
    states = ContributorStates(pending_period_s=300, recovery_period_s=300)
    # In ALARM at minute 5; absent from minute 8: 240 s absent at 12 (still ALARM), OK at 13.
    transitions = run(states, 20, {m: [GPU3] for m in range(8)})
    assert transitions == [Transition(300, GPU3, ALARM), Transition(780, GPU3, OK)]
    assert states.alarm_state == OK


def test_a_breach_within_the_recovery_period_keeps_the_gpu_in_alarm() -> None:
    states = ContributorStates(pending_period_s=300, recovery_period_s=300)
    # ALARM at 5; absent 8..10, back at 11..12, absent from 13: OK at 18, one ALARM only.
    returned = {m: [GPU3] for m in (*range(8), 11, 12)}
    assert run(states, 25, returned) == [
        Transition(300, GPU3, ALARM),
        Transition(1080, GPU3, OK),
    ]


def test_each_contributor_has_its_own_state_and_the_alarm_is_in_alarm_while_any_is() -> None:
    states = ContributorStates(pending_period_s=120, recovery_period_s=60)
    returned = {m: [GPU3] for m in range(6)} | {m: [GPU3, GPU5] for m in range(6, 9)}
    transitions = []
    for at in evaluation_times(0, 12 * 60, EVERY):
        transitions += states.evaluate(at, returned.get(int(at // 60), []))
        if at == 8 * 60:
            assert states.in_alarm() == [GPU3, GPU5]
        if at == 10 * 60:  # GPU3 and GPU5 absent 9..10: OK at 10 (60 s)
            assert states.alarm_state == OK
    assert transitions == [
        Transition(120, GPU3, ALARM),
        Transition(480, GPU5, ALARM),
        Transition(600, GPU3, OK),
        Transition(600, GPU5, OK),
    ]


def test_no_pending_period_alarms_at_the_first_evaluation_that_returns_the_gpu() -> None:
    states = ContributorStates(pending_period_s=0, recovery_period_s=0)
    assert run(states, 3, {1: [GPU5]}) == [Transition(60, GPU5, ALARM), Transition(120, GPU5, OK)]


def test_the_text_report_names_each_contributor_and_when_it_changed() -> None:
    spec, _ = promql_alarms(
        AlarmSettings(cluster_name="train", promql=True, gpu_instance_type="p5.48xlarge")
    )
    start = 1_763_856_000  # 2025-11-23 00:00 UTC
    text = report(
        spec, [Transition(start + 3360, GPU3, ALARM), Transition(start + 32760, GPU3, OK)]
    )
    assert text.splitlines() == [
        "gpu-low-power [warning] GPU in use but not working (PromQL, every 60 s, pending "
        "3300 s, recovery 300 s): 1 contributor(s) went into ALARM",
        "    contributor @resource.k8s.node.name=ip-10-0-1-7.ec2.internal, gpu=3:",
        "      2025-11-23 00:56  -> ALARM",
        "      2025-11-23 09:06  -> OK",
    ]
