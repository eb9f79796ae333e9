"""What a serving alarm's contributor names (cdk/alarms/serving_promql.py): the model, by the
server's own model label (contract/serving.py ``SERVERS``), and the Deployment and namespace
that serve it, from the labels the add-on puts on the pod's series (lambdas/shared/dcgm.py).
The replica alarms' contributors carry the pod and node as well, which the page names as it
names any pod and node; a model's (its latency, its errors) names none, so the notifier reads
the Deployment's replicas, their nodes and GPUs from DCGM's series at the alarm's time
(``read_replicas``). A Classic serving alarm's contributor (cdk/alarms/serving_classic.py)
has Container Insights' dimensions instead: Namespace, PodName (the Deployment or other
controller) and FullPodName (the pod), with the server's model label."""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from gpu_insights_agent.contract.metrics import DIM_NAMESPACE, DIM_POD_NAME
from gpu_insights_agent.contract.serving import SERVERS
from lambdas.notifier.jobs import few
from lambdas.notifier.notification import Incident
from lambdas.shared.dcgm import CLOUDWATCH as LABELS
from lambdas.shared.dcgm import DCGM_UTIL, DcgmLabels
from lambdas.shared.promql import PromQLClient, quote_label, quote_string

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


# --- A model's replicas (OTel mode) -----------------------------------------------------------

#: How far back a replica's GPU series is looked for at the alarm's time: the add-on scrapes
#: DCGM every 30 s or 60 s, so five minutes holds several samples of a live replica.
REPLICA_LOOKBACK_S: Final = 300


@dataclass(frozen=True)
class Replica:
    pod: str
    node: str
    gpu: str

    def order(self) -> tuple[str, int, str, str]:
        """By node, then GPU index as a number (GPU 10 after GPU 9)."""
        return (self.node, int(self.gpu) if self.gpu.isdigit() else -1, self.gpu, self.pod)


def replicas_query(
    cluster: str, namespace: str, deployment: str, labels: DcgmLabels = LABELS
) -> str:
    """Each GPU the Deployment's pods held in the last five minutes, from DCGM's series, which
    carry the pod, node, GPU and the pod's Deployment (lambdas/shared/dcgm.py): the replicas a
    model's page names, its series being the model's and naming none."""
    q = quote_label
    matchers = ", ".join(
        [
            f"__name__={quote_string(DCGM_UTIL)}",
            f"{q(labels.cluster)}={quote_string(cluster)}",
            f"{q(labels.namespace)}={quote_string(namespace)}",
            f"{q(labels.deployment)}={quote_string(deployment)}",
        ]
    )
    by = ", ".join(q(n) for n in (labels.pod, labels.node, labels.gpu))
    return f"count by ({by}) (last_over_time({{{matchers}}}[{REPLICA_LOOKBACK_S // 60}m]))"


def model_deployment(incident: Incident) -> tuple[str, str] | None:
    """(namespace, Deployment) of a model's page (its facts, ``serving_facts``) that names no
    replica; None for any other page."""
    facts = dict(incident.facts)
    deployment = facts.get("Deployment", "")
    if "Model" not in facts or incident.pods or "/" not in deployment:
        return None
    namespace, name = deployment.split("/", 1)
    return namespace, name


def read_replicas(
    client: PromQLClient, cluster: str, namespace: str, deployment: str, at_s: float
) -> list[Replica]:
    """The Deployment's replicas at ``at_s``; a refused read raises ``PromQLError``."""
    labels = LABELS
    series = client.query(replicas_query(cluster, namespace, deployment), at_s)
    found = {
        Replica(s.labels.get(labels.pod, ""), s.labels.get(labels.node, ""),
                s.labels.get(labels.gpu, ""))
        for s in series
    }  # fmt: skip
    return sorted(found, key=Replica.order)


def with_replicas(incident: Incident, replicas: list[Replica] | None, namespace: str) -> Incident:
    """A model's page told its replicas (pods of ``namespace``): their pods, nodes and GPUs (a
    few named, the rest counted); ``None`` where they could not be read, which the page says."""
    if replicas is None:
        return replace(
            incident,
            facts=(*incident.facts, ("Replicas", "not read (DCGM's series could not be queried)")),
        )
    if not replicas:
        return replace(
            incident,
            facts=(*incident.facts, ("Replicas", "none held a GPU in the last 5 minutes")),
        )
    pods = tuple(dict.fromkeys(f"{namespace}/{r.pod}" for r in replicas))
    nodes = tuple(dict.fromkeys(r.node for r in replicas))
    gpus = [f"{r.node} GPU {r.gpu}" for r in replicas]
    return replace(
        incident,
        pods=pods,
        node=few(nodes, "nodes"),
        gpu=few(gpus, "GPUs"),
        facts=(*incident.facts, ("Replicas", f"{len(pods):,}")),
    )
