"""What a serving alarm's contributor names (cdk/alarms/serving_promql.py): the model, by the
server's own model label (contract/serving.py ``SERVERS``), and the Deployment and namespace
that serve it, from the labels the add-on puts on the pod's series (lambdas/shared/dcgm.py).
The replica alarms' contributors carry the pod and node as well, which the page names as it
names any pod and node. A Classic serving alarm's contributor (cdk/alarms/serving_classic.py)
has Container Insights' dimensions instead: Namespace, PodName (the Deployment or other
controller) and FullPodName (the pod), with the server's model label."""

from collections.abc import Mapping
from typing import Final

from gpu_insights_agent.contract.metrics import DIM_NAMESPACE, DIM_POD_NAME
from gpu_insights_agent.contract.serving import SERVERS
from lambdas.shared.dcgm import CLOUDWATCH as LABELS

#: Every server's model label, in the table's order (vLLM's model_name first).
MODEL_LABELS: Final = tuple(dict.fromkeys(row.model_label for row in SERVERS.values()))


def serving_facts(attributes: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """("Model", ...) and ("Deployment", "namespace/name") where the contributor names them;
    nothing for a contributor that is no model's (a GPU's, a job's)."""
    model = next((attributes[k] for k in MODEL_LABELS if attributes.get(k)), None)
    owner_and_namespace = (
        (LABELS.deployment, LABELS.namespace),
        (DIM_POD_NAME, DIM_NAMESPACE),  # Classic's dimensions
    )
    owner = next(((o, n) for o, n in owner_and_namespace if attributes.get(o)), None)
    if model is None or owner is None:
        return ()
    namespace = attributes.get(owner[1])
    deployment = attributes[owner[0]]
    return (
        ("Model", model),
        ("Deployment", f"{namespace}/{deployment}" if namespace else deployment),
    )


def serving_place(
    attributes: Mapping[str, str], pods: tuple[str, ...], node: str, gpu: str
) -> tuple[str, str, str]:
    """The title's "where" (the model, its Deployment, and the replica's pod where the
    contributor is one), the node (a replica's; none for a model, whose page then links no
    node's dashboard) and the GPU row: a model's series names no GPU."""
    facts = dict(serving_facts(attributes))
    where = f" for {facts['Model']} ({facts['Deployment']})" + (f" on {pods[0]}" if pods else "")
    return (
        where,
        node,
        gpu or "not named (a model's series)",
    )
