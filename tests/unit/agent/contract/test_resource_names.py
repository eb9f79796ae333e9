"""Every name derived from a valid EKS cluster name is valid for its kind of resource.

EKS CreateCluster accepts 1-100 characters matching ``^[0-9A-Za-z][A-Za-z0-9\\-_]*``
(https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html); each rule's own
limit is cited in agent/gpu_insights_agent/contract/resource_names.py and cross-checked here
against the CloudFormation
registry schemas that cfn-lint ships.
"""

import json
from pathlib import Path

import cfnlint
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdk.settings import Settings
from dashboards.bodies import all_dashboards
from gpu_insights_agent.contract import metrics as contract
from gpu_insights_agent.contract import resource_names as names

eks_cluster_names = st.from_regex(r"\A[0-9A-Za-z][A-Za-z0-9_-]{0,99}\Z")
STACK_PARTS = ("Observability", "Alarms", "Analyzers")


def derived(cluster: str) -> list[tuple[names.NameRule, str]]:
    """Every name the app derives from the cluster name, with the rule it must meet."""
    found = [(names.STACK, names.stack_name(cluster, part)) for part in STACK_PARTS]
    for purpose in ("critical", "warning", "reports"):
        found.append((names.SNS_TOPIC, names.topic_name(cluster, purpose)))
        found.append((names.SNS_DISPLAY_NAME, names.topic_display_name(cluster, purpose)))
    found += [(names.ALARM, names.alarm_name(cluster, "gpu-fleet-health"))]
    found += [(names.DASHBOARD, name) for name in all_dashboards(cluster, [], [], "us-east-1")]
    found += [
        (names.LOG_GROUP, contract.training_log_group(cluster)),
        (names.LOG_GROUP, contract.exporter_log_group(cluster)),
        (names.LOG_GROUP, f"{contract.container_insights_log_group_prefix(cluster)}/host"),
        (names.METRIC_NAMESPACE, contract.host_log_namespace(cluster)),
        (names.SSM_PARAMETER, Settings(cluster_name=cluster).agent_config_parameter_name),
    ]
    return found


@given(eks_cluster_names)
def test_every_derived_name_is_valid_for_its_kind(cluster: str) -> None:
    for rule, name in derived(cluster):
        assert rule.fits(name), (rule.kind, name)


@given(eks_cluster_names, eks_cluster_names)
def test_distinct_clusters_get_distinct_names(one: str, other: str) -> None:
    if one != other:
        assert all(a != b for (_, a), (_, b) in zip(derived(one), derived(other), strict=True))


@given(eks_cluster_names)
def test_names_are_stable_and_keep_what_identifies_them(cluster: str) -> None:
    assert derived(cluster) == derived(cluster)
    assert names.stack_name(cluster, "Alarms").endswith("-Alarms")
    assert names.topic_display_name(cluster, "critical").endswith("-critical")
    # The weekly report reads alarm history by this prefix: alarm names are never cut.
    assert names.alarm_name(cluster, "xid").startswith(f"gpu-insights-{cluster}-")


def test_a_name_that_fits_is_unchanged() -> None:
    assert names.stack_name("train-prod", "Alarms") == "GpuInsights-train-prod-Alarms"
    assert names.topic_display_name("train-prod", "critical") == "gpu-insights-train-prod-critical"


def test_underscore_and_length_are_fitted_with_a_hash() -> None:
    # CreateStack: "can contain only alphanumeric characters (case-sensitive) and hyphens ...
    # can't be longer than 128 characters."
    # https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html
    assert names.stack_name("gpu_train", "Alarms").startswith("GpuInsights-gpu-train-")
    assert names.stack_name("gpu_train", "Alarms") != names.stack_name("gpu-train", "Alarms")
    long_name = names.topic_display_name("c" * 100, "critical")
    assert len(long_name) == 100
    assert long_name != names.topic_display_name("c" * 99 + "d", "critical")


def test_a_prefix_that_cannot_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot make a valid CloudFormation stack"):
        names.fit(names.STACK, "1-", "x_y")


def _registry_schema(resource_type: str) -> dict[str, object]:
    schemas = Path(cfnlint.__file__).parent / "data" / "schemas"
    digest = json.loads((schemas / "providers" / "us-east-1.json").read_text())[resource_type]
    (path,) = schemas.glob(f"**/{digest}.json")
    return dict(json.loads(path.read_text()))


@pytest.mark.parametrize(
    ("rule", "resource_type", "prop"),
    [
        (names.SNS_TOPIC, "AWS::SNS::Topic", "TopicName"),
        (names.ALARM, "AWS::CloudWatch::Alarm", "AlarmName"),
        (names.ALARM, "AWS::CloudWatch::CompositeAlarm", "AlarmName"),
        (names.LOG_GROUP, "AWS::Logs::LogGroup", "LogGroupName"),
        (names.IAM_ROLE, "AWS::IAM::Role", "RoleName"),
        (names.EVENT_RULE, "AWS::Events::Rule", "Name"),
        (names.S3_BUCKET, "AWS::S3::Bucket", "BucketName"),
    ],
)
def test_rules_are_no_looser_than_the_cloudformation_registry(
    rule: names.NameRule, resource_type: str, prop: str
) -> None:
    properties = _registry_schema(resource_type)["properties"]
    assert isinstance(properties, dict)
    assert rule.max_length <= properties[prop]["maxLength"]
