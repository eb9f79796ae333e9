"""The Region a deployment goes to, resolved as the CDK CLI resolves the app's default Region
(aws/aws-cdk-cli packages/aws-cdk/lib/api/aws-auth/awscli-compatible.ts, ``region``:
AWS_REGION, AMAZON_REGION, AWS_DEFAULT_REGION, AMAZON_DEFAULT_REGION, the profile's Region in
the credentials then the config file, the default profile's, then us-east-1), after the
project's own ``region`` setting."""

from cdk.deploy_region import (
    DeployRegion,
    deploy_region,
    deployment_line,
    profile_name,
    profile_region,
)
from cdk.settings import settings_from_context
from tests.docs_text import DOCS


def test_the_setting_first_then_the_cdk_clis_order() -> None:
    environ = {
        "AWS_REGION": "us-west-2",
        "AMAZON_REGION": "eu-west-2",
        "AWS_DEFAULT_REGION": "eu-central-1",
        "AMAZON_DEFAULT_REGION": "ap-south-1",
    }
    profile = DeployRegion("ap-northeast-1", "profile 'ml''s region in the config file")

    def resolve(setting: str | None, env: dict[str, str]) -> DeployRegion:
        return deploy_region(setting=setting, environ=env, profile=lambda: profile)

    assert resolve("eu-west-1", environ) == DeployRegion("eu-west-1", "the region setting")
    assert resolve(None, environ) == DeployRegion("us-west-2", "AWS_REGION")
    del environ["AWS_REGION"]
    assert resolve(None, environ).region == "eu-west-2"
    del environ["AMAZON_REGION"]
    assert resolve(None, environ) == DeployRegion("eu-central-1", "AWS_DEFAULT_REGION")
    del environ["AWS_DEFAULT_REGION"]
    assert resolve(None, environ).region == "ap-south-1"
    assert resolve(None, {}) == profile
    assert deploy_region(setting=None, environ={}) == DeployRegion(
        "us-east-1", "none set: the CDK CLI's default"
    )
    # A command's --region is what it reads; synth takes the CDK CLI's own resolution.
    assert deploy_region(setting="eu-west-1", environ={}, option="us-east-2").region == "us-east-2"
    cli = {"CDK_DEFAULT_REGION": "sa-east-1", "AWS_REGION": "us-west-2"}
    assert deploy_region(setting=None, environ=cli, cdk_cli=True).region == "sa-east-1"
    assert deploy_region(setting=None, environ=cli).region == "us-west-2"


def test_the_profiles_region_credentials_file_before_config_then_the_default_profile() -> None:
    credentials = {"ml": {"aws_access_key_id": "x"}, "default": {"region": "eu-north-1"}}
    config = {"ml": {"region": "ap-southeast-2"}, "default": {"region": "us-east-2"}}
    assert profile_region("ml", credentials, config) == DeployRegion(
        "ap-southeast-2", "profile 'ml''s region in the config file"
    )
    assert profile_region("other", credentials, config) == DeployRegion(
        "eu-north-1", "profile 'default''s region in the credentials file"
    )
    assert profile_region("ml", {}, {}) is None
    assert profile_name(None, {"AWS_DEFAULT_PROFILE": "b", "AWS_PROFILE": "a"}) == "a"
    assert profile_name("given", {"AWS_PROFILE": "a"}) == "given"
    assert profile_name(None, {}) == "default"


def test_the_line_names_region_source_mode_and_alarms() -> None:
    classic = settings_from_context({"cluster_name": "c", "region": "eu-central-1"})
    line = deployment_line(classic, DeployRegion("eu-central-1", "AWS_DEFAULT_REGION"), {})
    assert line == (
        "Region eu-central-1 (AWS_DEFAULT_REGION); Container Insights mode classic (unset: "
        "Classic, as AWS offers OTel Container Insights only in ap-southeast-1, "
        "ap-southeast-2, eu-west-1, us-east-1, us-west-2); 76 Metrics Insights alarms and "
        "0 PromQL alarms"
    )
    otel = settings_from_context({"cluster_name": "c", "region": "us-west-2"})
    assert deployment_line(otel, DeployRegion("us-west-2", "AWS_REGION"), {}).endswith(
        "mode otel (unset: OTel, as AWS offers it in this Region); 0 Metrics Insights alarms "
        "and 46 PromQL alarms"
    )


def test_the_command_line_page_quotes_the_line() -> None:
    """docs/cli.md's example is the line itself, and its OTel figures the line's."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    classic = settings_from_context({"cluster_name": "c", "region": "eu-central-1"})
    where = DeployRegion("eu-central-1", "AWS_DEFAULT_REGION")
    assert deployment_line(classic, where, {}) in text
    otel = settings_from_context({"cluster_name": "c", "region": "us-west-2"})
    said = deployment_line(otel, DeployRegion("us-west-2", "AWS_REGION"), {})
    assert " ".join(said.split("; ", 1)[1].split()) in " ".join(text.split())
