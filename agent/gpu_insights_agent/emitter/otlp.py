"""The training emitter's documents as OTLP points: the same windows and values its EMF path
publishes, labelled for PromQL (OTel Container Insights).

Resource: the cluster, namespace, pod and node (``k8s.*``, as the add-on names DCGM's, so one label
declaration reads both); datapoint: the job, the rank and the attempt (the ``Attempt`` property: a
restart begins new series, which the analyzer's goodput reads apart). What EMF needs and OTLP does
not is left out: the alarm ``Shard`` (a PromQL alarm groups by job), the properties (job state,
GPUs), the log group. Where the emitter leaves a pod attribute unset, the add-on's agent fills it
from the pod the request came from (its ``k8sattributes`` processor, which identifies the pod by
the connection's IP when no association is configured: aws/amazon-cloudwatch-agent
translator/translate/otel/processor/k8sattributesprocessor/translator.go;
open-telemetry/opentelemetry-collector-contrib processor/k8sattributesprocessor/pod_association.go,
``extractPodIDNoAssociations``), and it never overwrites one the emitter set (processor.go,
``setResourceAttribute``). Standard library only, Python 3.9.
"""

import os
from typing import Callable, List, Optional, Sequence, Tuple

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    DIM_NODE,
    OTLP_ATTEMPT,
    OTLP_CLUSTER,
    OTLP_JOB,
    OTLP_NAMESPACE,
    OTLP_NODE,
    OTLP_POD,
    OTLP_RANK,
    OTLP_SERVICE,
    OTLP_UNITS,
    POD_NAMESPACE_ENV,
    PROP_ATTEMPT,
    PROP_POD_NAME,
    PROP_RANK,
    SERVICE_ACCOUNT_NAMESPACE_FILE,
)
from gpu_insights_agent.emf.document import EmfDocument
from gpu_insights_agent.otlp import json_encoding
from gpu_insights_agent.otlp.json_encoding import Point

#: The emitter's ``service.name`` and instrumentation scope.
SERVICE_NAME = "gpu-insights-training"
SCOPE = "gpu_insights_agent.emitter"


def pod_namespace() -> Optional[str]:
    """The training pod's namespace: ``POD_NAMESPACE`` (downward API), else its service account
    token's namespace file; None outside a pod (the agent then fills it from the pod it sees)."""
    namespace = os.environ.get(POD_NAMESPACE_ENV)
    if namespace:
        return namespace
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE_FILE, encoding="utf-8") as file:
            return file.read().strip() or None
    except OSError:
        return None


def training_points(documents: Sequence[EmfDocument], namespace: Optional[str]) -> List[Point]:
    """Every metric each document's directives name, at the document's time, as a gauge."""
    points: List[Point] = []
    for document in documents:
        resource = [(OTLP_CLUSTER, str(document[DIM_CLUSTER]))]
        if namespace:
            resource.append((OTLP_NAMESPACE, namespace))
        if document.get(PROP_POD_NAME):
            resource.append((OTLP_POD, str(document[PROP_POD_NAME])))
        if document.get(DIM_NODE):
            resource.append((OTLP_NODE, str(document[DIM_NODE])))
        resource.append((OTLP_SERVICE, SERVICE_NAME))
        labels: Tuple[Tuple[str, str], ...] = (
            (OTLP_JOB, str(document[DIM_JOB])),
            (OTLP_RANK, str(document[PROP_RANK])),
        )
        if document.get(PROP_ATTEMPT):
            labels += ((OTLP_ATTEMPT, str(document[PROP_ATTEMPT])),)
        time_ns = int(document["_aws"]["Timestamp"]) * 1_000_000
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                name = metric["Name"]
                points.append(
                    Point(
                        resource=tuple(resource),
                        name=name,
                        unit=OTLP_UNITS.get(metric.get("Unit", "None"), ""),
                        attributes=labels,
                        time_ns=time_ns,
                        value=float(document[name]),
                    )
                )
    return points


def encoder(namespace: Optional[str]) -> Callable[[Sequence[EmfDocument]], bytes]:
    """The request body of a batch of the emitter's documents (``otlp.http_sink``)."""

    def encode(documents: Sequence[EmfDocument]) -> bytes:
        return json_encoding.encode(training_points(documents, namespace), scope=SCOPE)

    return encode
