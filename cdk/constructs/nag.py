"""cdk-nag acknowledgements that name exactly the finding they accept.

cdk-nag 3 wants one acknowledgement per finding, spelt as it renders the resource: pseudo
parameters as ``<AWS::Region>``. Rendering the id from the same ARN the policy uses keeps the
acknowledgement in step with the policy instead of a hand-copied string.
"""

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

from cdk.constructs.checkov import skip_provider_functions


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and set(value) == {"Fn::GetAtt"}:
        logical_id, attribute = value["Fn::GetAtt"]
        return f"<{logical_id}.{attribute}>"
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_render(part) for part in parts)
    raise ValueError(f"cannot render {value!r} the way cdk-nag names resources")


def acknowledge_wildcard_resources(
    construct: IConstruct, *, resources: list[str], reason: str
) -> None:
    """Accept AwsSolutions-IAM5 for each of these resource ARNs (or ``*``) with a reason."""
    stack = Stack.of(construct)
    Validations.of(construct).acknowledge(
        *(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::{_render(stack.resolve(resource))}]",
                reason=reason,
            )
            for resource in resources
        )
    )


#: The logical id prefix of CDK's singleton provider function for AwsCustomResource.
CUSTOM_RESOURCE_PROVIDER = "AWS679f53fac002430cb0da5b7982bd2287"


def acknowledge_custom_resource_provider(stack: Stack) -> None:
    """CDK's singleton provider function for AwsCustomResource: its runtime and its managed
    logging policy are CDK's choices, accepted here once per stack."""
    for child in stack.node.children:
        if child.node.id.startswith(CUSTOM_RESOURCE_PROVIDER):
            Validations.of(child).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
                    reason="CDK's custom-resource provider writes its own logs",
                ),
                Acknowledgment(id="AwsSolutions-L1", reason="CDK pins the provider's runtime"),
            )
            skip_provider_functions(child)
