"""The realistic model's OTel Container Insights series: the add-on's dcgm-exporter sends the
ten fields of its metricsConfig, each labelled with the driver version its one ``label`` field
names (aws-observability/helm-charts dcgm-exporter-daemonset.yaml)."""

from cli.demo.realistic import otel
from cli.demo.realistic.pods import JOB, Pod
from gpu_insights_agent.contract.metrics import ADDON_DCGM_FIELDS, ADDON_DCGM_LABEL_FIELDS


def test_every_dcgm_series_carries_the_driver_version_label() -> None:
    assert (otel.DRIVER_VERSION_LABEL,) == ADDON_DCGM_LABEL_FIELDS
    pod = Pod(
        name="train-0",
        namespace="ml",
        owner_kind=JOB,
        owner_name="train",
        workload_kind=JOB,
        workload="train",
    )
    for labels in (
        otel.dcgm_promql_labels("c", "ip-1", 3),
        otel.dcgm_promql_labels("c", "ip-1", 3, pod),
        otel.dcgm_pod_labels("c", "ip-1", pod, "main", 3),
    ):
        assert labels["DCGM_FI_DRIVER_VERSION"] == "575.51.03"


def test_the_units_the_add_on_sets_cover_the_series_it_sends_but_sm_clock() -> None:
    """The unit transform names DCGM_FI_DEV_SM_CLOCK, which the metricsConfig does not collect;
    of the ten collected, the unit transform names those the model reads."""
    assert "DCGM_FI_DEV_SM_CLOCK" in otel.DCGM_METRIC_UNITS
    assert "DCGM_FI_DEV_SM_CLOCK" not in ADDON_DCGM_FIELDS
    assert set(otel.DCGM_METRIC_UNITS) - {"DCGM_FI_DEV_SM_CLOCK"} <= ADDON_DCGM_FIELDS
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in ADDON_DCGM_FIELDS & set(otel.DCGM_METRIC_UNITS)
