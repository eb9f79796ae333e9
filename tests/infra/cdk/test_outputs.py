"""The stack outputs a user reads with ``aws cloudformation describe-stacks``: named as the
README and docs/ name them, never with a construct's hash."""

import re

from aws_cdk.assertions import Template

from tests.docs_text import pages
from tests.infra.conftest import Synth

FULL = {
    "cluster_name": "ml-prod",
    "account": "123456789012",
    "region": "us-west-2",
    "kubectl_role_arn": "arn:aws:iam::123456789012:role/eks-admin",
}
#: A CamelCase name in backticks with the word "output" near it: "the stack output `ImageUri`",
#: "its `AgentConfigFetchCommand` output", "the stack's `ReportBucketName` output".
_MENTION = re.compile(
    r"outputs?\W+(?:\w+\W+){0,2}?`([A-Z][a-z]+(?:[A-Z][a-z]*)+)`"
    r"|`([A-Z][a-z]+(?:[A-Z][a-z]*)+)`\s+outputs?\b"
)


def readme_outputs(text: str) -> set[str]:
    return {a or b for a, b in _MENTION.findall(text)}


def test_the_mention_pattern_finds_outputs_and_nothing_else() -> None:
    text = (
        "its URI as the stack\noutput `ImageUri`. the command the stack prints as its "
        "`AgentConfigFetchCommand` output; the stack's `ReportBucketName` output; a "
        "`DaemonSet` applied; the `LowPower` alarm"
    )
    assert readme_outputs(text) == {"ImageUri", "AgentConfigFetchCommand", "ReportBucketName"}


def test_every_output_the_readme_names_is_in_the_templates(synth: Synth) -> None:
    outputs = {
        name for stack in synth(FULL) for name in Template.from_stack(stack).find_outputs("*")
    }
    named = {name for page in pages() for name in readme_outputs(page.read_text())}
    assert {"ImageUri", "AgentConfigFetchCommand", "ReportBucketName"} <= named
    assert named - outputs == set()


def test_outputs_carry_no_construct_hash(synth: Synth) -> None:
    """``GpuExporterImageUri5B7FDA48`` is not a name a user can guess."""
    outputs = {
        name: stack.stack_name
        for stack in synth(FULL)
        for name in Template.from_stack(stack).find_outputs("*")
    }
    assert {n for n in outputs if re.search(r"[0-9A-F]{8}$", n)} == set()
    assert {
        "ImageUri",
        "AgentConfigFetchCommand",
        "CriticalTopicArn",
        "WarningTopicArn",
        "ReportTopicArn",
        "ReportBucketName",
    } <= set(outputs)
