"""The samples a full hour holds, read from the node GPU series' own hourly SampleCount."""

from lambdas.training_analyzer.gpu_hours.aws import CI_SAMPLES_PER_HOUR, samples_per_hour


def test_the_most_common_node_hour_sets_the_rate() -> None:
    # A 1 s interval: 3,600 samples a full hour; the hours a node starts or stops hold fewer.
    assert samples_per_hour([3600, 3600, 1200, 3600, 2400]) == 3600
    assert samples_per_hour([60, 60, 17]) == 60
    assert samples_per_hour([]) == CI_SAMPLES_PER_HOUR
    # Equally common: the larger (a full hour, not a partial one).
    assert samples_per_hour([360, 100]) == 360
