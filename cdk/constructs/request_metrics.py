"""Turns on S3 request metrics (one whole-bucket filter, id EntireBucket) on existing buckets.

The buckets are not this app's, so CloudFormation cannot own their metrics configuration; a
custom resource calls PutBucketMetricsConfiguration on create and DeleteBucketMetrics-
Configuration on delete, for exactly these buckets.
"""

from collections.abc import Sequence

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import custom_resources as cr
from constructs import Construct

from cdk.constructs.checkov import skip_provider_functions

FILTER_ID = "EntireBucket"


class RequestMetrics(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, buckets: Sequence[str]) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        for bucket in buckets:
            arn = f"arn:{stack.partition}:s3:::{bucket}"
            configuration = {"Bucket": bucket, "Id": FILTER_ID}
            cr.AwsCustomResource(
                self,
                f"Enable-{bucket}",
                on_create=cr.AwsSdkCall(
                    service="S3",
                    action="PutBucketMetricsConfiguration",
                    parameters={**configuration, "MetricsConfiguration": {"Id": FILTER_ID}},
                    physical_resource_id=cr.PhysicalResourceId.of(f"{bucket}/{FILTER_ID}"),
                ),
                on_delete=cr.AwsSdkCall(
                    service="S3",
                    action="DeleteBucketMetricsConfiguration",
                    parameters=configuration,
                ),
                policy=cr.AwsCustomResourcePolicy.from_sdk_calls(resources=[arn]),
                install_latest_aws_sdk=False,
            )
        # CDK's singleton provider function for AwsCustomResource: its runtime and its
        # managed logging policy are CDK's choices, accepted here once.
        for child in stack.node.children:
            if child.node.id.startswith("AWS679f53fac002430cb0da5b7982bd2287"):
                Validations.of(child).acknowledge(
                    Acknowledgment(
                        id="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
                        reason="CDK's custom-resource provider writes its own logs",
                    ),
                    Acknowledgment(id="AwsSolutions-L1", reason="CDK pins the provider's runtime"),
                )
                skip_provider_functions(child)
