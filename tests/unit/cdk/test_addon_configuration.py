import json

from cdk.constructs.addon_configuration import ObservabilityAddonConfiguration


def test_configuration_round_trips_through_json() -> None:
    config = ObservabilityAddonConfiguration.for_gpu_cluster(
        cluster_name="train",
        container_logs=False,
        tolerate_all_taints=True,
        gpu_taint_keys=("nvidia.com/gpu",),
    )
    values = json.loads(config.to_json())
    assert values["containerLogs"] == {"enabled": False}
    assert values["tolerations"] == [{"operator": "Exists"}]
    kubernetes = values["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]
    assert kubernetes["cluster_name"] == "train"
    assert kubernetes["accelerated_compute_metrics"] is True


def test_only_gpu_taints_when_not_tolerating_all() -> None:
    config = ObservabilityAddonConfiguration.for_gpu_cluster(
        cluster_name="train",
        container_logs=True,
        tolerate_all_taints=False,
        gpu_taint_keys=("nvidia.com/gpu", "example.com/h200"),
    )
    assert config.to_dict()["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        {"key": "example.com/h200", "operator": "Exists"},
    ]
