"""checkov skips, written into the resource's template metadata next to the code that makes
the choice, with the reason, as the cdk-nag acknowledgements are (cdk/constructs/nag.py).

checkov reads ``Metadata: {checkov: {skip: [{id, comment}]}}`` on a CloudFormation resource.
https://www.checkov.io/2.Basics/Suppressing%20and%20Skipping%20Policies.html
"""

from collections.abc import Mapping
from typing import Any

from aws_cdk import CfnResource
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct


def skip_checks(construct: IConstruct, reasons: Mapping[str, str]) -> None:
    """Skip these checks (id -> reason) on the construct's CloudFormation resource."""
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource to annotate")
    metadata: dict[str, Any] = resource.get_metadata("checkov") or {"skip": []}
    skipped = {entry["id"] for entry in metadata["skip"]}
    metadata["skip"] = [
        *metadata["skip"],
        *(
            {"id": check, "comment": reason}
            for check, reason in reasons.items()
            if check not in skipped
        ),
    ]
    resource.add_metadata("checkov", metadata)


#: Lambda checks that the app's functions do not meet by design.
FUNCTION_REASONS: Mapping[str, str] = {
    "CKV_AWS_117": "calls only public AWS APIs and reaches nothing in a VPC; a VPC would add "
    "NAT or endpoints for no gain",
    "CKV_AWS_115": "runs on a schedule or an event at low rates; reserved concurrency would "
    "take from the account's pool (and cannot be set in new accounts with a limit of 10)",
    "CKV_AWS_173": "environment holds names and ARNs, no secrets; Lambda encrypts it at rest "
    "with an AWS managed key",
}
#: For functions whose asynchronous failures go to an on-failure destination (SQS).
ON_FAILURE_REASON: Mapping[str, str] = {
    "CKV_AWS_116": "failed asynchronous invocations go to an SQS on-failure destination, "
    "which keeps the event and the error (a dead-letter queue keeps the event only)",
}
#: CDK's own provider functions (custom resources, kubectl): CloudFormation retries them.
PROVIDER_REASONS: Mapping[str, str] = {
    **FUNCTION_REASONS,
    "CKV_AWS_116": "a CDK provider function invoked synchronously by CloudFormation, which "
    "reports and retries failures itself; a dead-letter queue applies to async invocations",
}
LOG_GROUP_REASONS: Mapping[str, str] = {
    "CKV_AWS_158": "CloudWatch Logs encrypts every log group at rest; these hold metrics and "
    "function logs, no secrets, and a customer managed key would need its own key policy",
}
SSE_SQS_REASONS: Mapping[str, str] = {
    "CKV_AWS_27": "encrypted with SQS managed keys (SqsManagedSseEnabled), which this check "
    "does not recognise: it looks for KmsMasterKeyId only",
}


def skip_provider_functions(scope: IConstruct) -> None:
    """Skip the Lambda checks on CDK's provider functions under scope."""
    for child in scope.node.find_all():
        if isinstance(child, lambda_.CfnFunction):
            skip_checks(child, PROVIDER_REASONS)
