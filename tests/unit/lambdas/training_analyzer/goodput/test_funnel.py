"""The GPU-hour funnel (lambdas/training_analyzer/goodput/funnel.py) on plain data: two p5
nodes of eight GPUs for a day (384 GPU-hours paid), a training job, a notebook and an idle
replica on them, at $6.88 a GPU-hour."""

import pytest

from lambdas.training_analyzer.goodput.funnel import (
    NO_SIGNAL,
    NodeCapacity,
    Workload,
    check_nesting,
    from_goodput,
    funnel,
)

PRICE = 6.88
NODES = [
    NodeCapacity(node="a", gpu_hours=192.0, instance_type="p5.48xlarge", node_group="train"),
    # A node whose instance type is not known: its node group tells it.
    NodeCapacity(node="b", gpu_hours=192.0, node_group="serve"),
]
TRAINING = Workload(
    namespace="nlp",
    workload="bert",
    allocated=48.0,
    active=48.0,
    productive=28.8,
    badput={"data_loading": 19.2},
    productive_source="training steps",
)
NOTEBOOK = Workload(namespace="research", workload="jupyter", allocated=24.0, active=9.0)
REPLICA = Workload(
    namespace="serving",
    workload="vllm",
    allocated=24.0,
    active=20.0,
    faulted=2.0,
    productive=20.0,
    productive_source="served tokens",
)


def test_each_stage_in_gpu_hours_and_dollars_and_each_drop_named() -> None:
    doc = funnel(NODES, [TRAINING, NOTEBOOK, REPLICA], gpu_hour_usd=PRICE,
                 held_by_node={"a": 72.0, "b": 24.0})  # fmt: skip
    fleet = doc["fleet"]
    assert {s: v["gpu_hours"] for s, v in fleet.items()} == {
        "paid": 384.0,
        "allocated": 96.0,
        "active": 77.0,
        "productive": 48.8,
    }
    assert fleet["paid"]["usd"] == pytest.approx(384 * PRICE)
    drops = doc["drops"]
    # Capacity no pod asked for, by instance type (else node group): each node's paid less
    # what its pods held.
    assert drops["not_allocated"]["by_group"] == {
        "serve": {"gpu_hours": 168.0, "usd": round(168 * PRICE, 2)},
        "p5.48xlarge": {"gpu_hours": 120.0, "usd": round(120 * PRICE, 2)},
    }
    assert drops["not_allocated"]["gpu_hours"] == 288.0
    # Held and idle (the notebook's 15, the replica's 2) and held on a lost GPU (2).
    held = drops["held_not_active"]
    idle, lost = held["held_idle"]["gpu_hours"], held["held_faulted"]["gpu_hours"]
    assert (held["gpu_hours"], idle, lost) == (19.0, 17.0, 2.0)
    assert [(w["workload"], w["held_idle"]["gpu_hours"]) for w in held["by_workload"]] == [
        ("jupyter", 15.0),
        ("vllm", 2.0),
    ]
    # Active but not productive by badput category: data loading, and the notebook's active
    # hours that no step or token says were productive.
    assert drops["active_not_productive"]["by_category"] == {
        "data_loading": {"gpu_hours": 19.2, "usd": round(19.2 * PRICE, 2)},
        NO_SIGNAL: {"gpu_hours": 9.0, "usd": round(9.0 * PRICE, 2)},
    }
    assert check_nesting(doc) == []
    assert doc["clamped"] == {}


def test_the_stages_nest_and_what_breaks_the_nesting_is_cut_and_said() -> None:
    # A workload said to be more active than allocated and more productive than active, on
    # less capacity than pods held: each cut to the stage above, the cut reported.
    broken = Workload(namespace="x", workload="y", allocated=10.0, active=12.0, productive=15.0)
    doc = funnel([NodeCapacity(node="a", gpu_hours=8.0)], [broken], gpu_hour_usd=1.0)
    assert check_nesting(doc) == []
    (row,) = doc["workloads"]
    assert (row["allocated"]["gpu_hours"], row["active"]["gpu_hours"]) == (10.0, 10.0)
    assert row["productive"]["gpu_hours"] == 10.0
    assert {s: v["gpu_hours"] for s, v in doc["fleet"].items()} == {
        "paid": 8.0, "allocated": 8.0, "active": 8.0, "productive": 8.0,
    }  # fmt: skip
    assert doc["clamped"] == {"active": 2.0, "allocated": 2.0, "productive": 5.0}


def test_badput_categories_fill_the_drop_exactly() -> None:
    # Categories that claim more than the drop are scaled to it; the rest of a drop they do
    # not cover is the no-signal category.
    over = Workload(namespace="n", workload="w", allocated=10.0, active=10.0, productive=6.0,
                    badput={"data_loading": 6.0, "checkpoint_save": 2.0})  # fmt: skip
    (row,) = funnel([], [over], gpu_hour_usd=1.0)["workloads"]
    assert {k: v["gpu_hours"] for k, v in row["badput"].items()} == {
        "checkpoint_save": 1.0,
        "data_loading": 3.0,
    }
    under = Workload(namespace="n", workload="w", allocated=10.0, active=10.0, productive=6.0,
                     badput={"data_loading": 1.0})  # fmt: skip
    (row,) = funnel([], [under], gpu_hour_usd=1.0)["workloads"]
    assert {k: v["gpu_hours"] for k, v in row["badput"].items()} == {
        "data_loading": 1.0,
        NO_SIGNAL: 3.0,
    }


def test_check_nesting_names_the_workload_and_stages() -> None:
    doc = {
        "fleet": {"paid": {"gpu_hours": 1.0}, "allocated": {"gpu_hours": 2.0}},
        "workloads": [
            {"namespace": "n", "workload": "w", "allocated": {"gpu_hours": 1.0},
             "active": {"gpu_hours": 3.0}},
        ],
    }  # fmt: skip
    assert check_nesting(doc) == [
        "the fleet: allocated 2.0 > paid 1.0",
        "n/w: active 3.0 > allocated 1.0",
    ]


def test_a_jobs_goodput_gives_its_productive_stage_and_names_the_drop_by_badput() -> None:
    # The job's goodput files say 200 productive, 100 data loading and 20 held with no steps
    # of the 320 GPU-hours it held (and 16 pending, which held nothing); the attribution says
    # it held 336 (x 1.05), 300 of them active.
    split = {"productive": 200.0, "data_loading": 100.0, "held_no_steps": 20.0,
             "waiting_for_gpus": 16.0}  # fmt: skip
    productive, badput = from_goodput(336.0, 300.0, split)
    assert productive == pytest.approx(210.0)
    # The 36 held-and-idle hours come from time with no step first (its 21), then the rest.
    assert badput == pytest.approx({"data_loading": 90.0})
    job = Workload(namespace="nlp", workload="bert", allocated=336.0, active=300.0,
                   productive=productive, badput=badput)  # fmt: skip
    doc = funnel([NodeCapacity(node="a", gpu_hours=336.0)], [job], gpu_hour_usd=PRICE)
    assert doc["drops"]["active_not_productive"]["by_category"] == {
        "data_loading": {"gpu_hours": 90.0, "usd": round(90 * PRICE, 2)}
    }
    assert doc["clamped"] == {}


def test_goodput_beyond_active_is_clipped_to_it_and_the_cut_reported() -> None:
    # Its emitter says 9 of its 10 GPU-hours were kept steps; its GPUs read idle by power in
    # 8 of them: productive is cut to its 2 active hours, the 7 beyond them reported.
    productive, badput = from_goodput(10.0, 2.0, {"productive": 9.0, "data_loading": 1.0})
    assert productive == pytest.approx(9.0)
    assert badput == {}
    job = Workload(namespace="n", workload="w", allocated=10.0, active=2.0,
                   productive=productive, badput=badput)  # fmt: skip
    doc = funnel([NodeCapacity(node="a", gpu_hours=10.0)], [job], gpu_hour_usd=1.0)
    assert doc["workloads"][0]["productive"]["gpu_hours"] == 2.0
    assert doc["clamped"] == {"productive": 7.0}
    assert check_nesting(doc) == []


def test_capacity_no_pod_asked_for_names_the_attributions_not_held_and_the_rest() -> None:
    """Of the 288 GPU-hours no pod asked for, 280 are the attribution's not-held class (the
    report's headline and idle-capacity action) and 8 a lost GPU's that no pod held."""
    doc = funnel(NODES, [TRAINING, NOTEBOOK, REPLICA], gpu_hour_usd=PRICE,
                 held_by_node={"a": 72.0, "b": 24.0}, not_held=280.0)  # fmt: skip
    drop = doc["drops"]["not_allocated"]
    assert drop["not_held"] == {"gpu_hours": 280.0, "usd": round(280 * PRICE, 2)}
    assert drop["lost_or_unseen"] == {"gpu_hours": 8.0, "usd": round(8 * PRICE, 2)}
    assert "not_held" not in funnel(NODES, [TRAINING], gpu_hour_usd=PRICE)["drops"]["not_allocated"]
