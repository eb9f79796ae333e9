"""The NVML exporter on every GPU node: its image, and (given a kubectl role) its DaemonSet."""

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    IgnoreMode,
    NestedStack,
    Stack,
    Validations,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_eks as eks
from constructs import Construct

from cdk.constructs.checkov import skip_provider_functions
from cdk.node_config.manifest import exporter_manifests
from cdk.outputs import IMAGE_URI
from gpu_insights_agent.contract.metrics import ExporterSink

#: The image's build context: agent/ alone (its Dockerfile installs it), in .dockerignore syntax
#: without what a local install or test run leaves there.
AGENT = Path(__file__).resolve().parents[2] / "agent"
IMAGE_EXCLUDE = ["**/__pycache__", "**/*.pyc", "*.egg-info", "build", "dist"]


@dataclass(frozen=True)
class KubectlNetwork:
    """Where the kubectl provider's functions run to reach a private cluster endpoint."""

    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_id: str


class GpuExporter(Construct):
    """Attributes: ``image`` (the image asset), ``manifest`` (None without a kubectl role)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        interval_s: int,
        gpu_node_labels: tuple[str, ...],
        gpu_taint_keys: tuple[str, ...],
        tolerate_all_taints: bool,
        pod_attribution: bool,
        kubectl_role_arn: str | None,
        kubectl_network: KubectlNetwork | None = None,
        alarm_shards: int = 1,
        sink: ExporterSink = ExporterSink.EMF,
    ) -> None:
        super().__init__(scope, construct_id)
        # Built at deploy time; synth only stages and fingerprints the context (no Docker).
        self.image = ecr_assets.DockerImageAsset(
            self,
            "Image",
            directory=str(AGENT),
            platform=ecr_assets.Platform.LINUX_AMD64,
            exclude=IMAGE_EXCLUDE,
            ignore_mode=IgnoreMode.DOCKER,
        )
        manifests = exporter_manifests(
            image=self.image.image_uri,
            cluster_name=cluster_name,
            interval_s=interval_s,
            alarm_shards=alarm_shards,
            sink=sink,
            gpu_node_labels=gpu_node_labels,
            gpu_taint_keys=gpu_taint_keys,
            tolerate_all_taints=tolerate_all_taints,
            pod_attribution=pod_attribution,
        )
        self.manifest: eks.KubernetesManifest | None = None
        if kubectl_role_arn is not None:
            self.manifest = self._apply(cluster_name, kubectl_role_arn, manifests, kubectl_network)
        output = CfnOutput(
            self,
            IMAGE_URI,
            description="The exporter image; `gpu-insights manifest --image` takes it",
            value=self.image.image_uri,
        )
        # An output inside a construct gets a hashed id (GpuExporterImageUri5B7FDA48); the
        # stack's output is named as the README and docs/deploy.md name it, for `aws cloudformation
        # describe-stacks`.
        output.override_logical_id(IMAGE_URI)

    def _apply(
        self,
        cluster_name: str,
        kubectl_role_arn: str,
        manifests: list[dict[str, object]],
        network: KubectlNetwork | None,
    ) -> eks.KubernetesManifest:
        from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer

        # Without a network, CDK's kubectl provider runs outside any VPC and reaches only a
        # public endpoint ("If not specified, the k8s endpoint is expected to be accessible
        # publicly": aws-cdk-lib aws-eks ClusterAttributes.kubectlPrivateSubnetIds).
        in_vpc = {}
        if network is not None:
            in_vpc = {
                # The subnets are named; the VPC's zones are not read (any one stands in).
                "vpc": ec2.Vpc.from_vpc_attributes(
                    self, "Vpc", vpc_id=network.vpc_id, availability_zones=["-"]
                ),
                "kubectl_private_subnet_ids": list(network.subnet_ids),
                "kubectl_security_group_id": network.security_group_id,
            }
        cluster = eks.Cluster.from_cluster_attributes(
            self,
            "Cluster",
            cluster_name=cluster_name,
            kubectl_role_arn=kubectl_role_arn,
            kubectl_layer=KubectlV33Layer(self, "KubectlLayer"),
            **in_vpc,  # type: ignore[arg-type]
        )
        manifest = eks.KubernetesManifest(
            self, "DaemonSet", cluster=cluster, manifest=manifests, overwrite=True
        )
        _acknowledge_kubectl_provider(Stack.of(self))
        return manifest


def _acknowledge_kubectl_provider(stack: Stack) -> None:
    """CDK's kubectl provider is CDK's own nested stack of Lambda functions. Its choices
    (the managed execution and ECR pull policies, the handler's pinned runtime, the framework
    invoking its handler's versions) are CDK's; they are reviewed and accepted here, once."""
    for child in stack.node.children:
        if isinstance(child, NestedStack) and child.node.id.endswith("-KubectlProvider"):
            Validations.of(child).acknowledge(
                *(Acknowledgment(id=rule, reason=reason) for rule, reason in _KUBECTL_PROVIDER)
            )
            skip_provider_functions(child)


_ECR_PUBLIC_POLICY = (
    '{"Fn::If":["HandlerHasEcrPublic195AF58A",{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},'
    '":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}'
)
_KUBECTL_PROVIDER = (
    (
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole]",
        "CDK's kubectl provider functions write their own logs with the basic execution policy",
    ),
    (
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
        "AmazonEC2ContainerRegistryPullOnly]",
        "CDK's kubectl handler pulls Helm OCI charts from ECR; this project applies no chart",
    ),
    (
        f"AwsSolutions-IAM4[Policy::{_ECR_PUBLIC_POLICY}]",
        "CDK's kubectl handler reads ECR Public only when a chart needs it; none here does",
    ),
    (
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaVPCAccessExecutionRole]",
        "in the cluster's VPC (kubectl_vpc_id), CDK's kubectl provider functions manage their "
        "network interfaces with the VPC execution policy",
    ),
    ("AwsSolutions-L1", "CDK pins the kubectl handler's runtime to match its kubectl layer"),
    (
        "AwsSolutions-IAM5[Resource::<Handler886CB40B.Arn>:*]",
        "the provider framework invokes its own handler, any version of it",
    ),
)
