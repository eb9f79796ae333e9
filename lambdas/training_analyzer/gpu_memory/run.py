"""One GPU memory right-sizing over the analysis window: read, judge, find. Runs inside the
training analyzer's invocation, once for the cluster, with the jobs' pods and nodes the
emitter reported (exact job names and instance types) from the same run."""

from collections.abc import Mapping

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.findings import AnalysisRun
from lambdas.shared.metric_fetcher import MetricDataError
from lambdas.shared.promql import PromQLClient, PromQLError
from lambdas.training_analyzer.gpu_memory.analysis import (
    ANALYZER,
    MemoryThresholds,
    judge_jobs,
    memory_findings,
)
from lambdas.training_analyzer.gpu_memory.aws import read_gpu_memory
from lambdas.training_analyzer.gpu_memory.otel import read_gpu_memory_otel


def analyze_gpu_memory(
    *,
    cloudwatch: object,
    cluster: str,
    start: float,
    end: float,
    gpu_hour_usd: float,
    thresholds: MemoryThresholds,
    exact_jobs: Mapping[str, str] | None = None,
    pod_nodes: Mapping[str, str] | None = None,
    promql: PromQLClient | None = None,
) -> AnalysisRun:
    """``promql``: read DCGM's series in OTel Container Insights mode rather than Classic's
    ``pod_gpu_memory_*`` (None). ``pod_nodes`` (Classic): each pod's node, for its instance
    type."""
    run = AnalysisRun(analyzer=ANALYZER)
    try:
        gpus = (
            read_gpu_memory(
                cloudwatch,
                cluster,
                start=start,
                end=end,
                exact_jobs=exact_jobs,
                pod_nodes=pod_nodes,
            )
            if promql is None
            else read_gpu_memory_otel(promql, cluster, start=start, end=end, exact_jobs=exact_jobs)
        )
    except (ClientError, BotoCoreError, MetricDataError, PromQLError) as err:
        run.skip(f"GPU memory of {cluster}", err)
        return run
    jobs = judge_jobs(
        gpus, thresholds=thresholds, gpu_hour_usd=gpu_hour_usd, window_hours=(end - start) / 3600
    )
    run.findings += memory_findings(jobs, thresholds)
    return run
