"""What a GPU node's or a crash-looping GPU pod's contributor names (cdk/alarms/nodes.py): the
node and how many GPUs it has (``NODE_GPUS``), or the pod, its node and the GPUs it holds
(``POD_GPUS``), from the labels ``count_values`` puts on the series
(lambdas/shared/kube_state.py). Kube State Metrics names no GPU index, so the GPU row says how
many, not which; the page's fields are escaped per channel as every page's are
(lambdas/notifier/markup.py)."""

from collections.abc import Mapping

from lambdas.shared.kube_state import NODE_GPUS, POD_GPUS


def node_facts(attributes: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """("GPUs on the node", n) or ("GPUs held by the pod", n); nothing for another series."""
    if attributes.get(NODE_GPUS):
        return (("GPUs on the node", attributes[NODE_GPUS]),)
    if attributes.get(POD_GPUS):
        return (("GPUs held by the pod", attributes[POD_GPUS]),)
    return ()


def node_place(
    attributes: Mapping[str, str], pods: tuple[str, ...], where: str, gpu: str
) -> tuple[str, str]:
    """The title's "where" and the GPU row: a node's alarm is about all its GPUs, a pod's
    names the pod first (the node is its own row). Any other series keeps both."""
    if attributes.get(NODE_GPUS):
        return where, f"all {attributes[NODE_GPUS]} of the node's GPUs"
    if attributes.get(POD_GPUS) and pods:
        return f" on {pods[0]}", f"{attributes[POD_GPUS]} held by the pod (indices not named)"
    return where, gpu
