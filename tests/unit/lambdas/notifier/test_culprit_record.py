"""A fail-slow page's culprit node recorded for the lemon-node score: one EMF line per page
that names a culprit, none for a page that names none, and a node that is no Kubernetes node
name refused, the page standing (lambdas/notifier/culprit_record.py, handler.record_culprit)."""

import json
import logging

import pytest

from lambdas.notifier import handler
from lambdas.notifier.culprit_record import CulpritRecordError, culprit_line
from lambdas.notifier.fail_slow_page import with_culprit
from lambdas.shared.fail_slow import Culprit, Verdict
from tests.unit.lambdas.notifier.test_fail_slow_page import PAGE

AT_MS = 1_790_000_000_000


def test_a_page_naming_a_culprit_is_one_count_on_its_node() -> None:
    told = with_culprit(PAGE, Verdict(Culprit(node="ip-10-0-1-2.ec2.internal", gpu="2")))
    line = culprit_line(told, AT_MS)
    assert line is not None
    doc = json.loads(line)
    assert doc["fail_slow_culprits"] == 1.0
    assert (doc["ClusterName"], doc["NodeName"]) == ("train", "ip-10-0-1-2.ec2.internal")
    (directive,) = doc["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "GpuInsights"
    assert directive["Dimensions"] == [["ClusterName", "NodeName"]]
    assert directive["Metrics"] == [{"Name": "fail_slow_culprits", "Unit": "Count"}]
    assert doc["_aws"]["Timestamp"] == AT_MS


def test_a_page_with_no_culprit_or_an_unread_one_records_nothing() -> None:
    whole_job = with_culprit(PAGE, Verdict(None, whole_job="the whole job slowed"))
    assert culprit_line(whole_job, AT_MS) is None
    assert culprit_line(with_culprit(PAGE, None), AT_MS) is None


@pytest.mark.parametrize(
    "node", ['n1", "_aws": {}', "Node-A", "-n", "n" * 254, "ip-10-0-1-2 \u00e9", ""]
)
def test_a_node_that_is_no_node_name_is_refused_by_name(node: str) -> None:
    told = with_culprit(PAGE, Verdict(Culprit(node=node)))
    with pytest.raises(CulpritRecordError, match=r"^k: culprit node .* is no Kubernetes node name"):
        culprit_line(told, AT_MS)


def test_a_refused_record_is_logged_and_prints_nothing(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    told = with_culprit(PAGE, Verdict(Culprit(node="Bad Node")))
    with caplog.at_level(logging.WARNING):
        handler.record_culprit(told, AT_MS)
    assert capsys.readouterr().out == ""
    assert "culprit node 'Bad Node' is no Kubernetes node name" in caplog.text
    handler.record_culprit(with_culprit(PAGE, Verdict(Culprit(node="n1"))), AT_MS)
    assert json.loads(capsys.readouterr().out)["NodeName"] == "n1"
