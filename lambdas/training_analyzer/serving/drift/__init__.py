"""Serving drift: each served model's traffic against its own past (docs/drift.md). The reads
(promql.py), the calibrated test (statistic.py), the day's shifts (detect.py) and the
``serving_drift`` finding (finding.py); ``drift_findings`` joins them for the daily run."""

from datetime import date

from lambdas.shared.findings import Finding
from lambdas.training_analyzer.serving.drift.detect import detect
from lambdas.training_analyzer.serving.drift.finding import drift_finding
from lambdas.training_analyzer.serving.drift.promql import DriftReads


def drift_findings(reads: DriftReads, day: date) -> list[Finding]:
    """A ``serving_drift`` finding for each model whose day moved from its baseline."""
    return [
        drift_finding(model, shifts, day=day, baseline=reads.baselines[model])
        for model, model_day in sorted(reads.days.items())
        if (shifts := detect(model_day))
    ]
