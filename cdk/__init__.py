"""The CDK app: settings, stacks and constructs. Only ``cdk.app`` reads context or environment;
importing the package quiets jsii's Node banner for the Node process aws_cdk starts later
(cdk/node_banner.py), whether `cdk synth` or the demo synthesizes."""

from cdk.installed import require
from cdk.node_banner import quiet_node_banner

# Every module here imports the agent's contract: a Python without the project (cdk.json's
# python3 outside .venv) is told how to run synth in one line, not a traceback.
require(("gpu_insights_agent",))
quiet_node_banner()
