"""The GPU-hours a job's own pods held whole (lambdas/training_analyzer/job_gpus.py)."""

from lambdas.training_analyzer.gpu_hours.attribution import GpuKey, Hold
from lambdas.training_analyzer.job_gpus import whole_hours

H = 3600


def _hold(pod: str, gpu: str, hour: int, share: float) -> Hold:
    return Hold(gpu=GpuKey("n1", gpu), hour=hour, namespace="nlp", pod=pod, share=share)


def test_only_whole_hours_of_the_jobs_own_pods_count() -> None:
    """mixtral's pods held GPU 6 for 50 minutes of the first hour (its GPU mean mixes in the
    10 idle minutes) and GPU 6 whole the next; a sample short of 60 is still whole; the
    notebook's pod is no job's here."""
    holds = [
        _hold("mixtral-master-0", "6", 0, 50 / 60),
        _hold("mixtral-master-0", "6", H, 1.0),
        _hold("mixtral-worker-0", "7", H, 59 / 60),
        _hold("jupyter-0", "4", H, 1.0),
    ]
    jobs = {"mixtral-master-0": "mixtral", "mixtral-worker-0": "mixtral"}
    assert whole_hours(holds, jobs) == {"mixtral": {("n1", "6", float(H)), ("n1", "7", float(H))}}


def test_a_job_placed_only_in_parts_of_hours_has_no_gpu_hour_of_its_own() -> None:
    """Its pods were seen (so its node's mean is not its figure), but never for a whole hour."""
    holds = [_hold("llama-master-0", "2", 0, 20 / 60), _hold("llama-worker-0", "3", 0, 20 / 60)]
    jobs = {"llama-master-0": "llama", "llama-worker-0": "llama"}
    assert whole_hours(holds, jobs) == {"llama": set()}
