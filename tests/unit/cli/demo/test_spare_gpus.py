"""The demo's jobs on spare GPUs (cli/demo/spare_gpus.py): placed once each, their holds on
the hour, never two on one GPU at once."""

import pytest

from cli.demo.realistic import pods as k8s
from cli.demo.spare_gpus import checked
from cli.demo.week import SpareHold

NODE = "ip-10-0-2-22.ec2.internal"
(MASTER, WORKER) = k8s.pytorchjob_pods("nlp", "llama", 1)
(OTHER,) = k8s.pytorchjob_pods("nlp", "gpt", 0)
HOUR = 1_796_569_200.0


def test_holds_that_start_on_the_hour_on_gpus_of_their_own_are_kept() -> None:
    holds = [
        SpareHold(MASTER, NODE, 2, HOUR, HOUR + 1500),
        SpareHold(WORKER, NODE, 3, HOUR, HOUR + 1500),
        SpareHold(OTHER, NODE, 2, HOUR + 3600, HOUR + 7200),
    ]
    assert checked(holds, {"llama", "gpt"}) == tuple(holds)


@pytest.mark.parametrize(
    ("holds", "placed", "message"),
    [
        ([SpareHold(MASTER, NODE, 2, HOUR, HOUR + 60)], {"llama", "gpt"}, "never run: gpt"),
        ([SpareHold(MASTER, NODE, 2, HOUR + 60, HOUR + 120)], {"llama"}, "starts off an hour"),
        (
            [
                SpareHold(MASTER, NODE, 2, HOUR, HOUR + 1500),
                SpareHold(OTHER, NODE, 2, HOUR, HOUR + 3600),
            ],
            {"llama"},
            f"llama-master-0 and gpt-master-0 hold GPU 2 of {NODE} at once",
        ),
    ],
)
def test_a_misplaced_hold_is_named(holds: list[SpareHold], placed: set[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        checked(holds, placed)
