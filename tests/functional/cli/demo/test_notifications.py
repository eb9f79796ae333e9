"""The demo's notifier (cli/demo/notifications.py) as Lambda runs it: what the function prints
(its EMF line of refused log events, each batch) goes to its own log, never into the demo's
output, which begins with its header."""

import json

import pytest
from moto import mock_aws

from cdk.settings import Settings
from cli.demo.command import DEMO_REGION
from cli.demo.exporter import NODE
from cli.demo.notifications import STORM_LINE, _deployed, _received, _subscription
from cli.demo.storage import DEMO_CLUSTER
from lambdas.notifier import handler as notifier
from lambdas.shared.aws_clients import new_session


def test_the_notifiers_printed_lines_stay_out_of_the_demos_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = json.dumps({"message": STORM_LINE, "hostname": NODE})
    with mock_aws():
        session = new_session(
            aws_access_key_id="demo", aws_secret_access_key="demo", region_name=DEMO_REGION
        )
        with _deployed(session, Settings(cluster_name=DEMO_CLUSTER)) as queues:
            answer = notifier.handler(_subscription([line], 1_796_000_000_000), None)
            received = _received(session.client("sqs"), queues)
    for service in ("sns", "dynamodb", "logs"):
        notifier._clients.pop(service, None)
    assert answer["published"] == 1  # the batch was read and paged
    assert [subject for _, subject, _ in received] == [
        f"[WARNING] XID 13 on {NODE} GPU PCI 0000:53:00"
    ]
    assert capsys.readouterr().out == ""
