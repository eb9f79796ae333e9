from lambdas.training_analyzer.gpu_hours.aws import (
    UNKNOWN_NODE,
    PodOnDevice,
    pod_power_percent,
    resolve_nodes,
)


def test_pods_that_find_no_gpu_with_hour_left_time_slice_the_closest() -> None:
    # Two notebooks time-slice n1's nvidia0 all hour (each reads the device's 700 W, as DCGM
    # labels one device sample with every pod on it); a job holds n2's at 100 W.
    nodes = resolve_nodes(
        [PodOnDevice("a", 1.0, 700.0), PodOnDevice("b", 1.0, 700.0), PodOnDevice("c", 1.0, 100.0)],
        {"n1": 700.0, "n2": 100.0},
    )
    assert nodes == {"a": "n1", "b": "n1", "c": "n2"}


def test_a_pod_without_power_among_free_gpus_is_not_placed() -> None:
    nodes = resolve_nodes([PodOnDevice("nb", 1.0, None)], {"n1": 84.0, "n2": 616.0})
    assert nodes == {"nb": UNKNOWN_NODE}
    assert resolve_nodes([PodOnDevice("nb", 1.0, None)], {}) == {"nb": UNKNOWN_NODE}


def test_a_pods_power_is_read_against_its_gpus_limit() -> None:
    # The GPU's hour: 245 W mean, 35% of its limit (700 W); the pod drew 616 W while it held it.
    assert pod_power_percent(616.0, 245.0, 35.0) == 88.0
    assert pod_power_percent(None, 245.0, 35.0) is None
    assert pod_power_percent(616.0, 0.0, 0.0) is None
