"""The fail-slow culprit: each kind of evidence names its GPU, rank or node; what a node's GPUs
share is the node's; a whole job waiting for data, or nothing standing out, names none."""

from dataclasses import replace

from gpu_insights_agent.contract.metrics import GpuMetric
from lambdas.shared.fail_slow import (
    GPU_EVIDENCE,
    GpuEvidence,
    RankEvidence,
    Reduce,
    Throttle,
    clock_scores,
    gpu_evidence,
    rank_culprits,
    same_place,
)

NODES = ("ip-10-0-1-1", "ip-10-0-1-2", "ip-10-0-1-3")
CLOCK = 1980.0  # an H100 SXM's boost clock, MHz


def _job() -> tuple[list[GpuEvidence], list[RankEvidence]]:
    gpus, ranks = [], []
    for n, node in enumerate(NODES):
        for g in range(4):
            gpus.append(GpuEvidence(node=node, gpu=str(g), sm_clock_mhz=CLOCK - 5 * g))
            rank = str(4 * n + g)
            ranks.append(RankEvidence(rank, f"llm-worker-{rank}", node, str(g), 2.0, 2.0))
    return gpus, ranks


def _with_gpu(gpus: list[GpuEvidence], node: str, gpu: str, **changes: object) -> list[GpuEvidence]:
    return [replace(g, **changes) if (g.node, g.gpu) == (node, gpu) else g for g in gpus]  # type: ignore[arg-type]


def test_a_thermally_throttled_gpu_is_named_with_its_rank_pod_and_evidence() -> None:
    gpus, ranks = _job()
    gpus = _with_gpu(
        gpus, NODES[1], "2", throttle=frozenset({Throttle.THERMAL}), sm_clock_mhz=1500.0
    )
    verdict = rank_culprits(gpus, ranks)
    c = verdict.culprit
    assert c is not None
    assert (c.node, c.gpu, c.rank, c.pod) == (NODES[1], "2", "6", "llm-worker-6")
    assert c.evidence == (
        "NVML clock event reason: thermal slowdown",
        "SM clock 1500 MHz, 0.76 of the job's fastest GPU (1980 MHz)",
    )
    assert verdict.lines()[0] == (
        f"Most likely culprit: rank 6, pod llm-worker-6, node {NODES[1]}, GPU 2"
    )


def test_a_power_brake_on_every_gpu_of_a_node_is_the_nodes() -> None:
    gpus, ranks = _job()
    braked = frozenset({Throttle.POWER_BRAKE})
    gpus = [
        replace(g, throttle=braked, sm_clock_mhz=CLOCK / 2) if g.node == NODES[2] else g
        for g in gpus
    ]
    c = rank_culprits(gpus, ranks).culprit
    assert c is not None
    assert (c.node, c.gpu, c.rank) == (NODES[2], "", "")
    assert c.evidence[0] == "4 of the node's 4 GPUs: NVML clock event reason: hardware power brake"
    assert same_place(c, NODES[2])
    assert not same_place(c, NODES[2], gpu="1")


def test_a_link_whose_errors_rise_is_named_though_its_clock_is_as_its_peers() -> None:
    gpus, ranks = _job()
    gpus = _with_gpu(gpus, NODES[0], "3", nvlink_errors=240.0, nvlink_errors_before=2.0)
    c = rank_culprits(gpus, ranks).culprit
    assert c is not None
    assert (c.node, c.gpu) == (NODES[0], "3")
    assert c.evidence == ("rising: NVLink errors 240 (before 2)",)
    # The same count as before is no rise: nothing stands out.
    steady = _with_gpu(_job()[0], NODES[0], "3", nvlink_errors=2.0, nvlink_errors_before=2.0)
    assert rank_culprits(steady, ranks).culprit is None


def test_one_ranks_data_wait_names_the_rank() -> None:
    gpus, ranks = _job()
    ranks = [replace(r, data_wait_share=35.0) if r.rank == "9" else r for r in ranks]
    c = rank_culprits(gpus, ranks).culprit
    assert c is not None
    assert (c.rank, c.node, c.gpu) == ("9", NODES[2], "1")
    assert c.evidence == ("rank 9's data wait 35% of the step (the job's median 2%)",)


def test_every_rank_waiting_is_the_data_source_and_names_no_node() -> None:
    gpus, ranks = _job()
    ranks = [replace(r, data_wait_share=30.0 + int(r.rank) % 3) for r in ranks]
    verdict = rank_culprits(gpus, ranks)
    assert verdict.culprit is None
    assert verdict.lines() == [
        "No single culprit: every rank waits longer for its data (the job's median data wait "
        "31% of the step, 2% before): the data source (storage, the dataset's bucket, its "
        "network) slowed for the whole job"
    ]


def test_a_cpu_starved_node_with_its_ranks_waiting_is_the_node() -> None:
    gpus, ranks = _job()
    ranks = [replace(r, data_wait_share=25.0) if r.node == NODES[0] else r for r in ranks]
    cpu = {NODES[0]: 98.0, NODES[1]: 41.0, NODES[2]: 44.0}
    c = rank_culprits(gpus, ranks, cpu).culprit
    assert c is not None
    assert (c.node, c.gpu, c.rank) == (NODES[0], "", "")
    assert c.evidence == (
        "4 of the node's 4 ranks wait for data, up to 25% of the step (the job's median 2%)",
        "node CPU 98% (the job's median node 44%)",
    )


def test_nothing_standing_out_or_a_tie_names_no_culprit() -> None:
    gpus, ranks = _job()
    assert rank_culprits(gpus, ranks).lines() == [
        "No single culprit: no GPU, rank or node stands out from the others: the whole job "
        "slowed (its network, its code, or its input)"
    ]
    hot = frozenset({Throttle.THERMAL})
    two = _with_gpu(_with_gpu(gpus, NODES[0], "0", throttle=hot), NODES[1], "0", throttle=hot)
    verdict = rank_culprits(two, ranks)
    assert verdict.culprit is None
    assert verdict.whole_job.startswith(
        "2 candidates show as much evidence: node ip-10-0-1-1 GPU 0"
    )


def test_the_clock_score_is_the_gpus_clock_over_the_jobs_fastest() -> None:
    gpus = [
        GpuEvidence(node="a", gpu="0", sm_clock_mhz=1980.0),
        GpuEvidence(node="a", gpu="1", sm_clock_mhz=990.0),
        GpuEvidence(node="a", gpu="2"),  # not sent: no score
    ]
    assert clock_scores(gpus) == {("a", "0"): 1.0, ("a", "1"): 0.5}


def test_one_table_turns_the_exporters_series_into_a_gpus_evidence() -> None:
    """What either page reads of a GPU (its flags' largest, the clock's mean, the counters'
    sums, now over five minutes and before over ten) becomes the same evidence: a flag set is
    a reason, a counter before is scaled to the five minutes, an unread clock is unknown (not
    0 MHz, which would read as the slowest GPU)."""
    assert GPU_EVIDENCE[GpuMetric.THROTTLED_HW_SLOWDOWN] is Reduce.MAX
    assert GPU_EVIDENCE[GpuMetric.SM_CLOCK] is Reduce.AVG
    assert GPU_EVIDENCE[GpuMetric.NVLINK_ERRORS] is Reduce.SUM
    assert Reduce.SUM.statistic == "Sum"
    now = {
        GpuMetric.THROTTLED_HW_SLOWDOWN: 1.0,
        GpuMetric.THROTTLED_THERMAL: 0.0,
        GpuMetric.SM_CLOCK: 1410.0,
        GpuMetric.PCIE_REPLAYS: 60.0,
    }
    gpu = gpu_evidence("n", "3", now, {GpuMetric.PCIE_REPLAYS: 40.0})
    assert gpu.throttle == frozenset({Throttle.HW_SLOWDOWN})
    assert (gpu.sm_clock_mhz, gpu.pcie_replays, gpu.pcie_replays_before) == (1410.0, 60.0, 20.0)
    assert (gpu.nvlink_errors, gpu.ecc_errors) == (0.0, 0.0)
    assert gpu_evidence("n", "3", {}, {}).sm_clock_mhz is None


def test_without_ranks_the_jobs_own_data_wait_tells_the_data_source() -> None:
    """Classic publishes the job's data wait, not each rank's: risen 10 points, it is the data
    source for the whole job; unread, nothing is said of it."""
    gpus, _ = _job()
    verdict = rank_culprits(gpus, [], job_data_wait=(31.0, 3.0))
    assert verdict.culprit is None
    assert "the data source" in verdict.whole_job
    assert "31% of the step, 3% before" in verdict.whole_job
    assert "data source" not in rank_culprits(gpus, []).whole_job


def test_a_ranks_own_data_wait_names_the_rank_though_its_series_name_no_gpu() -> None:
    """The emitter's series (OTLP labels, EMF documents) name a rank's pod and node, no GPU:
    a rank waiting for data is named by its rank and pod all the same, not as its node."""
    gpus, ranks = _job()
    ranks = [replace(r, gpu="") for r in ranks]
    ranks[6] = replace(ranks[6], data_wait_share=35.0)
    c = rank_culprits(gpus, ranks).culprit
    assert c is not None
    assert (c.rank, c.pod, c.node, c.gpu) == ("6", "llm-worker-6", NODES[1], "")
