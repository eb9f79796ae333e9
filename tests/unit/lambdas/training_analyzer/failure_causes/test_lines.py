"""Each line format reduces to the text its program printed, keeping the node its envelope names."""

import json

import pytest

from lambdas.training_analyzer.failure_causes import read_lines

XID = (
    "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, "
    "An uncorrectable double bit error"
)


@pytest.mark.parametrize(
    "raw",
    [
        XID,
        f"[  219.470994] {XID}",  # dmesg
        f"[Thu Dec  7 00:05:15 2017] {XID}",  # dmesg -T
        f"Dec  2 11:38:47 worker4 kernel: [  219.470994] {XID}",  # journalctl -k
        f"2024-03-13T08:15:02.118270412Z {XID}",  # kubectl logs --timestamps
        f"2025-05-16T16:39:51.208-07:00 {XID}",  # CloudWatch Logs export
        f"  | 2024-11-28T07:42:11.527Z | {XID}",  # CloudWatch console rows copied
        f"[pod/train-0/pytorch] {XID}",  # kubectl logs --prefix
        json.dumps({"message": f"[  219.470994] {XID}", "ec2_instance_id": "i-0abc"}),  # host group
    ],
)
def test_prefixes_and_envelopes_come_off(raw: str) -> None:
    (line,) = read_lines(raw)
    assert line.text == XID
    assert line.raw == raw
    assert line.number == 1


def test_torchrun_and_glog_prefixes_come_off_the_watchdog_line() -> None:
    raw = (
        "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
        "collective operation timeout"
    )
    assert read_lines(raw)[0].text == "[Rank 0] Watchdog caught collective operation timeout"


def test_application_record_gives_its_log_and_the_pods_node() -> None:
    record = {
        "log": 'Traceback (most recent call last):\n  File "/app/train.py", line 9, in step\n',
        "stream": "stderr",
        "kubernetes": {"pod_name": "train-0", "host": "ip-10-0-7-41.us-west-2.compute.internal"},
    }
    lines = read_lines(json.dumps(record) + "\n" + json.dumps({**record, "log": "KeyError: 3\n"}))
    assert [(line.number, line.text) for line in lines] == [
        (1, "Traceback (most recent call last):"),
        (1, '  File "/app/train.py", line 9, in step'),
        (2, "KeyError: 3"),
    ]
    assert {line.node for line in lines} == {"ip-10-0-7-41.us-west-2.compute.internal"}


def test_dataplane_record_gives_its_message_and_hostname() -> None:
    record = {"hostname": "ip-10-0-1-5", "systemd_unit": "kubelet.service", "message": "x y"}
    (line,) = read_lines(json.dumps(record))
    assert (line.text, line.node) == ("x y", "ip-10-0-1-5")


def test_filter_log_events_output_is_read_event_by_event() -> None:
    export = {
        "events": [
            {"logStreamName": "s", "timestamp": 1, "message": "first"},
            {"logStreamName": "s", "timestamp": 2, "message": f"[  219.470994] {XID}"},
        ],
        "searchedLogStreams": [],
    }
    lines = read_lines(json.dumps(export, indent=2))
    assert [(line.number, line.text) for line in lines] == [(1, "first"), (2, XID)]


def test_json_that_is_not_a_record_stays_as_written() -> None:
    (line,) = read_lines('{"reason": "OOMKilled"}')
    assert line.text == '{"reason": "OOMKilled"}'


def test_terminal_escapes_are_read_away_in_plain_lines_and_in_records() -> None:
    """A coloured line, and a Fluent Bit record whose JSON escapes decode to colour and an
    OSC 8 link (\\u001b), read as the text the program printed."""
    plain = "\x1b[1;31mRuntimeError: CUDA error: device-side assert triggered\x1b[0m"
    record = json.dumps(
        {"log": "\x1b]8;;http://x\x07torch.OutOfMemoryError\x1b]8;;\x07: CUDA out of memory\n",
         "kubernetes": {"host": "ip-10-0-1-2\x1b[8m"}}
    )  # fmt: skip
    first, second = read_lines(plain + "\n" + record)
    assert first.text == "RuntimeError: CUDA error: device-side assert triggered"
    assert (second.text, second.node) == (
        "torch.OutOfMemoryError: CUDA out of memory",
        "ip-10-0-1-2",
    )
