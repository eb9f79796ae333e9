"""A synthetic training fleet that differs job by job, for the fan-out's equality check
(benchmarks/fan_out.py, tests/unit/lambdas/training_analyzer/test_fleet.py): every job its own
data wait, throughput against its baseline, failures, a straggler rank on some, four ranks on
nodes shared with neighbouring jobs (so a shard reads GPUs that other shards read too), and
each node's GPUs their own power and SM activity. CloudWatch and Logs are real botocore
clients answered at the HTTP layer (benchmarks/wire.py); S3, where the plan and parts are
staged, a real botocore client answered from a dict before the call (cli/service_answers.py).
The rank query's rows are cut and paged as Logs Insights cuts and pages them.
"""

import io
from typing import Any, Final

from botocore.response import StreamingBody

from benchmarks import wire
from cli.service_answers import answer, error, insights_bounds, insights_limit, insights_page
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_SHARD,
    GpuMetric,
    alarm_shard,
    gpu_schema,
)

RANKS = 4
GPUS = 8
PAGE = 500

#: Goodput's series a steady job sends as 0 (no startup, save, evaluation, stall or idle time
#: in its hours, no resume): lambdas/training_analyzer/aws.py JOB_METRICS.
QUIET_GOODPUT: Final[dict[str, float]] = dict.fromkeys(
    (
        "startup_seconds",
        "checkpoint_save_total_seconds",
        "evaluation_seconds",
        "stalled_seconds",
        "idle_seconds",
        "resumed_from_step",
    ),
    0.0,
)


def gpu_dimensions(metric: str, node: str, gpu: int) -> list[tuple[str, str]]:
    """A GPU's series as the exporter writes ``metric`` (``gpu_schema``: the alarm metrics,
    the allocated reading among them, carry the GPU's alarm shard), as ListMetrics lists it."""
    dims = [(DIM_CLUSTER, "bench"), (DIM_NODE, node), (DIM_GPU_INDEX, str(gpu))]
    if DIM_SHARD in gpu_schema(GpuMetric(metric)):
        dims.append((DIM_SHARD, alarm_shard(node, gpu, 1)))
    return dims


class Fleet:
    def __init__(self, jobs: int, *, start: float, end: float) -> None:
        self.jobs = [f"job-{j:05d}" for j in range(jobs)]
        self.nodes = max(1, jobs * RANKS // GPUS)
        self.start, self.end = start, end
        self.hours = [start + h * 3600 for h in range(int(end - start) // 3600)]
        self.queries: list[list[list[dict[str, str]]]] = []

    def node(self, job: int, rank: int) -> str:
        return f"node-{(job * RANKS + rank) // GPUS % self.nodes:05d}"

    def _value(self, metric: str, dims: dict[str, str], window: bool, before: bool) -> float:
        if "NodeName" in dims:
            n = int(dims["NodeName"].split("-")[1]) % 4
            power = metric == str(GpuMetric.ALLOCATED_POWER_UTILIZATION)
            return 45.0 + 10 * n if power else 70.0 + 5 * n
        j = int(dims["JobName"].split("-")[1])
        by_metric = {
            # 0% to 20% below the baseline, the window before this one
            "samples_per_second": 1000.0 if before else 1000.0 - 40.0 * (j % 6),
            "step_time_seconds": 2.0,
            "data_wait_seconds": 0.1 * (j % 7),
            "checkpoint_save_seconds": 400.0 if j % 11 == 0 else 60.0,
            "job_failed": float(j % 9 == 0) * (2.0 if window else 1.0),
            "job_succeeded": 0.0,
            "steps": 1800.0,
            # Goodput's: an hour of its four ranks' seconds, waiting for data or working.
            "data_wait_total_seconds": 1800.0 * 0.1 * (j % 7),
            "compute_seconds": RANKS * 3600.0 - 1800.0 * 0.1 * (j % 7),
            "step_number": 1800.0,
            **QUIET_GOODPUT,
        }
        return by_metric[metric]

    def get_metric_data(self, params: dict[str, Any]) -> dict[str, Any]:
        """Under CloudWatch's limits: over them, refused or paged (``wire.metric_data_page``)."""
        return wire.metric_data_page(params, lambda: self._results(params))

    def _results(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        results = []
        for q in params["MetricDataQueries"]:
            stat = q["MetricStat"]
            metric = stat["Metric"]["MetricName"]
            dims = {d["Name"]: d["Value"] for d in stat["Metric"]["Dimensions"]}
            window = stat["Period"] > 3600
            value = self._value(metric, dims, window, float(params["StartTime"]) < self.start)
            if window:
                stamps, values = [params["StartTime"]], [value]
            elif metric == "resumed_from_step":  # no attempt began in the day: none stored
                stamps, values = [], []
            elif stat["Stat"] == "SampleCount":
                stamps, values = self.hours, [1.0] * len(self.hours)
            else:
                stamps, values = self.hours, [value] * len(self.hours)
            results.append({"Id": q["Id"], "Timestamps": stamps, "Values": values})
        return results

    def list_metrics(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["Namespace"] == "GpuInsights/Training":
            dims = [[("ClusterName", "bench"), ("JobName", j)] for j in self.jobs]
        else:
            dims = [
                gpu_dimensions(params["MetricName"], f"node-{n:05d}", g)
                for n in range(self.nodes)
                for g in range(GPUS)
            ]
        first = int(params.get("NextToken", 0))
        page = [
            {
                "Namespace": params["Namespace"],
                "MetricName": params["MetricName"],
                "Dimensions": [{"Name": k, "Value": v} for k, v in d],
            }
            for d in dims[first : first + PAGE]
        ]
        more = {"NextToken": str(first + PAGE)} if first + PAGE < len(dims) else {}
        return {"Metrics": page, **more}

    def rows(self) -> list[list[dict[str, str]]]:
        """The rank query's rows over the whole fleet: one a job's rank."""
        return [
            [
                {"field": "JobName", "value": job},
                {"field": "Rank", "value": str(r)},
                {"field": "steps", "value": "6000"},
                {"field": "step_time", "value": "3.0" if j % 4 == 0 and r == 3 else "2.0"},
                {"field": "node", "value": self.node(j, r)},
                {"field": "pod", "value": f"{job}-{r}"},
            ]
            for j, job in enumerate(self.jobs)
            for r in range(RANKS)
        ]

    def start_query(self, params: dict[str, Any]) -> dict[str, Any]:
        """The query's rows, filtered, cut at its limit, kept for its pages."""
        query = params["queryString"]
        limit = insights_limit(query, params.get("limit"))
        self.queries.append(insights_bounds(query, self.rows())[:limit])
        return {"queryId": str(len(self.queries) - 1)}

    def ranks(self, params: dict[str, Any]) -> dict[str, Any]:
        """A page of the query's rows, as Logs Insights pages them."""
        return insights_page(self.queries[int(params["queryId"])], params)

    def clients(self) -> tuple[Any, Any]:
        """CloudWatch and Logs, as the handler gets them, answered by this fleet."""
        cloudwatch = wire.client("cloudwatch")
        wire.serve_json(
            cloudwatch, {"GetMetricData": self.get_metric_data, "ListMetrics": self.list_metrics}
        )
        logs = wire.client("logs")
        wire.serve_json(logs, {"StartQuery": self.start_query, "GetQueryResults": self.ranks})
        return cloudwatch, logs


def bucket_client(objects: dict[str, bytes]) -> Any:
    """A real S3 client whose PutObject and GetObject read and write ``objects`` by key."""
    s3 = wire.client("s3")

    def put(params: dict[str, Any]) -> dict[str, Any]:
        body = params["Body"]
        objects[params["Key"]] = body if isinstance(body, bytes) else body.read()
        return {}

    def get(params: dict[str, Any]) -> dict[str, Any]:
        body = objects.get(params["Key"])
        if body is None:
            return error("NoSuchKey", "The specified key does not exist.", 404)
        return {"Body": StreamingBody(io.BytesIO(body), len(body))}

    answer(s3, "PutObject", put)
    answer(s3, "GetObject", get)
    return s3


def serve_failure_logs(logs: Any, line: str, *, refuse: str | None = None) -> Any:
    """Container Insights' log groups behind the fleet's logs client: each failed job's pod
    stream printed ``line`` around its failure; the pod named ``refuse`` is refused (access
    denied: a 400 that botocore does not retry, where a throttled read, refused as often as the
    handler's client retries, would end the same way after about a minute of backoff)."""

    def streams(params: dict[str, Any]) -> dict[str, Any]:
        prefix = params["logStreamNamePrefix"]
        if refuse and refuse in prefix:
            # "AccessDeniedException: You don't have sufficient permissions to perform this
            # action" (botocore's logs model, the CloudWatch Logs API's shared error shape).
            raise wire.RefusedError("AccessDeniedException", "not authorized to read the stream")
        return {"logStreams": [{"logStreamName": prefix + "x"}]}

    def events(params: dict[str, Any]) -> dict[str, Any]:
        # Read from the stream's end (GetLogEvents, startFromHead false): one page, then the
        # stream's start, where the backward token comes back as it was sent.
        if "nextToken" in params:
            return {"events": [], "nextBackwardToken": params["nextToken"]}
        found = params["logGroupName"].endswith("/application")
        page = [{"timestamp": params["startTime"] + 1, "message": line}] if found else []
        return {"events": page, "nextBackwardToken": "b/0", "nextForwardToken": "f/0"}

    wire.serve_json(logs, {"DescribeLogStreams": streams, "GetLogEvents": events})
    return logs
