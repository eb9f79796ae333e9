"""A PromQL job alarm's page (OTel mode with the OTLP sink): the contributor is the job, named
by its series' cluster, namespace and job_name labels (cdk/alarms/jobs_promql.py); its ranks'
pods and nodes come from PromQL (tests/functional/lambdas/test_notifier.py reads them from a
real engine)."""

from cdk.alarms.catalog import AlarmSettings, deployed_alarms, promql_alarms
from lambdas.notifier.incidents import Deployment, Skipped, from_alarm_event
from lambdas.notifier.jobs import NO_GPU_LABEL, Placement, Rank, job_incident
from lambdas.notifier.notification import (
    MAX_SUBJECT,
    Incident,
    cut_subject,
    render_text,
    subject,
)
from tests.unit.lambdas.notifier.events import (
    AWS_CONTRIBUTOR_EXAMPLE,
    PROMQL_JOB_LABELS,
    alarm_level,
    as_promql_contributor,
)

OTLP = AlarmSettings(cluster_name="train", promql=True, otlp=True)
(HUNG,) = [s for s in promql_alarms(OTLP) if s.key == "job-hung"]
DEPLOYMENT = Deployment(
    cluster="train",
    region="us-east-1",
    gpu_dashboard="gpu-insights-train-gpu-node",
    alarm_kinds={s.kind: (s.severity, s.title) for s in deployed_alarms(OTLP)},  # type: ignore[misc]
    promql_kinds=frozenset(s.kind for s in promql_alarms(OTLP)),
)
EVENT = as_promql_contributor(
    AWS_CONTRIBUTOR_EXAMPLE, "gpu-insights-train-job-hung", HUNG.description, PROMQL_JOB_LABELS
)


def _incident() -> Incident:
    incident = from_alarm_event(EVENT, DEPLOYMENT)
    assert isinstance(incident, Incident)
    return incident


def test_the_contributor_names_the_job_its_namespace_and_cluster_from_its_labels() -> None:
    incident = _incident()
    assert (incident.kind, incident.severity) == ("job-hung", "critical")
    assert (incident.cluster, incident.job, incident.namespace) == ("train", "llama-hangs", "nlp")
    assert incident.title == "Training job hung"
    # The alarm's own state change is no second page: each job comes as a contributor.
    skipped = from_alarm_event(alarm_level(EVENT), DEPLOYMENT)
    assert isinstance(skipped, Skipped)
    assert "contributor event" in skipped.reason


def test_the_page_names_the_ranks_pods_and_nodes_and_says_the_gpus_are_no_label() -> None:
    placement = Placement(
        (
            Rank("0", pod="llama-hangs-master-0", node="ip-10-0-4-10.ec2.internal"),
            Rank("1", pod="llama-hangs-worker-0", node="ip-10-0-4-11.ec2.internal"),
        ),
        gpus_unknown=NO_GPU_LABEL,
    )
    page = job_incident(_incident(), "us-east-1", placement)
    assert page.title == (
        "Training job hung: job llama-hangs on ip-10-0-4-10.ec2.internal, ip-10-0-4-11.ec2.internal"
    )
    assert subject(page).startswith("[CRITICAL] Training job hung: job llama-hangs on ")
    text = render_text(page)
    for line in (
        "Cluster:       train",
        "Pods:          llama-hangs-master-0, llama-hangs-worker-0",
        "Job:           llama-hangs",
        "Namespace:     nlp",
        f"GPU:           {NO_GPU_LABEL}",
    ):
        assert line in text, text
    assert "#dashboards/dashboard/gpu-insights-train-training?var-job=llama-hangs" in text


def test_a_metrics_insights_job_contributor_has_no_namespace_row() -> None:
    """Classic's contributor is (ClusterName, JobName): no namespace is claimed."""
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE,
        "gpu-insights-train-job-hung-shard-03",
        HUNG.description,
        {"ClusterName": "train", "JobName": "llama-hangs"},
    )
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert (incident.job, incident.namespace) == ("llama-hangs", None)
    assert "Namespace:" not in render_text(incident)


def test_a_long_subject_is_cut_after_a_whole_word_never_inside_a_node_name() -> None:
    """SNS's subject is under 100 characters: a job's nodes past it are cut after the last
    whole name that fits, then " ...", not mid-name (``ip-10-0-4-4`` would name another node)."""
    nodes = "ip-10-0-4-40.ec2.internal, ip-10-0-4-41.ec2.internal"
    long = f"[WARNING] Training job slowed (fail-slow): job bert-slows on {nodes}"
    cut = cut_subject(long)
    assert cut == (
        "[WARNING] Training job slowed (fail-slow): job bert-slows on ip-10-0-4-40.ec2.internal ..."
    )
    assert len(cut) <= MAX_SUBJECT
    assert cut_subject("[WARNING] short") == "[WARNING] short"
    # One word past the limit: cut at the limit, still marked.
    assert cut_subject("x" * 150) == "x" * (MAX_SUBJECT - 4) + " ..."
