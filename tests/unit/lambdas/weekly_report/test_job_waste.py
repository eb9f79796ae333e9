"""Each job's week priced once (lambdas/weekly_report/job_waste.py), at $6.88 a GPU-hour."""

import pytest

from lambdas.weekly_report.job_waste import job_rows

PRICE = 6.88
WASTE = {
    "gpu_hour_usd": PRICE,
    "all_jobs": [
        {"namespace": "nlp", "job": "bert", "held_gpu_hours": 336.0,
         "stepping_gpu_hours": 336.0, "not_working_gpu_hours": 0.0, "inferred": False},
    ],
}  # fmt: skip
#: The day's data-bound finding: 0.800 s of each 2.003 s step waiting for data, priced on the
#: 48 GPU-hours the job stepped that day.
DATA_BOUND = {
    "kind": "training_data_bound",
    "resource": "job/bert",
    "evidence": {
        "gpu_hours": 48,
        "gpu_hour_usd": PRICE,
        "waste_in_lookback_usd": round(48 * PRICE * 0.800 / 2.003, 2),
    },
}


def test_a_finding_is_priced_on_the_weeks_stepping_hours_at_its_share() -> None:
    (row,) = job_rows(WASTE, [DATA_BOUND])
    (priced,) = row["priced_findings"]
    assert priced["basis"] == "week"
    assert priced["gpu_hours"] == pytest.approx(336 * 0.800 / 2.003, abs=0.01)  # 134.2


def test_a_job_whose_goodput_measured_the_badput_is_priced_at_that_figure() -> None:
    """The week's goodput measured 134.37 GPU-hours of data loading over what its pods held:
    the job row, its action and the showback CSV say those, as the funnel and goodput.csv
    do, not the day's share of each step times its stepping hours (134.18)."""
    goodput = {"bert": {"productive": 201.63, "data_loading": 134.37}}
    (row,) = job_rows(WASTE, [DATA_BOUND], goodput=goodput)
    (priced,) = row["priced_findings"]
    assert (priced["gpu_hours"], priced["usd"]) == (134.37, round(134.37 * PRICE, 2))
    assert row["waiting_usd"] == round(134.37 * PRICE, 2)
    # A finding whose badput its goodput does not name keeps its own share.
    other = job_rows(WASTE, [DATA_BOUND], goodput={"bert": {"checkpoint_save": 3.0}})
    assert other[0]["priced_findings"][0]["gpu_hours"] == pytest.approx(134.2, abs=0.05)
