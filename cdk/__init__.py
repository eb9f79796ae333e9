"""The CDK app: settings, stacks and constructs. Only ``cdk.app`` reads context or environment;
importing the package quiets jsii's Node banner for the Node process aws_cdk starts later
(cdk/node_banner.py), whether `cdk synth` or the demo synthesizes."""

from cdk.node_banner import quiet_node_banner

quiet_node_banner()
