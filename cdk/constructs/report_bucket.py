"""The report bucket: findings (JSON lines) and weekly reports, encrypted with a customer
managed key, private, TLS only, versioned, with its access logs in a second bucket."""

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from cdk.constructs.checkov import skip_checks


class ReportBucket(Construct):
    """Attributes: ``key``, ``bucket``, ``access_logs``. Stateful: keep the construct ids."""

    def __init__(self, scope: Construct, construct_id: str, *, cluster_name: str) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "DataKey",
            description=f"EKS GPU Insights findings and reports for {cluster_name}",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        Validations.of(self.access_logs).acknowledge(
            Acknowledgment(
                id="AwsSolutions-S1",
                reason="holds the report bucket's access logs; logging it too would recurse",
            )
        )
        skip_checks(
            self.access_logs,
            {
                "CKV_AWS_18": "holds the report bucket's access logs; logging it too would recurse",
                "CKV_AWS_21": "S3 log delivery writes each log object once; versions would only "
                "keep deleted logs past their 90-day expiry",
            },
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="report-bucket/",
            lifecycle_rules=[s3.LifecycleRule(noncurrent_version_expiration=Duration.days(30))],
            removal_policy=RemovalPolicy.RETAIN,
        )
