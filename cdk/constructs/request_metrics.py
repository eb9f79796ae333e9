"""Turns on S3 request metrics (one whole-bucket filter of the app's own id) on existing buckets.

The buckets are not this app's, so CloudFormation cannot own their metrics configuration; a
custom resource calls PutBucketMetricsConfiguration on create and DeleteBucketMetrics-
Configuration on delete, for exactly these buckets.

Its policy is written out rather than guessed by ``from_sdk_calls``, which would name the API
operations (s3:PutBucketMetricsConfiguration), not IAM's actions: both operations are
authorized by ``s3:PutMetricsConfiguration``
(https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteBucketMetricsConfiguration.html,
"you must have permissions to perform the s3:PutMetricsConfiguration action").
"""

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct

from cdk.constructs.nag import acknowledge_custom_resource_provider
from gpu_insights_agent.contract.metrics import REQUEST_METRICS_FILTER_ID

FILTER_ID = REQUEST_METRICS_FILTER_ID


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
                policy=cr.AwsCustomResourcePolicy.from_statements(
                    [iam.PolicyStatement(actions=["s3:PutMetricsConfiguration"], resources=[arn])]
                ),
                install_latest_aws_sdk=False,
            )
        acknowledge_custom_resource_provider(stack)
