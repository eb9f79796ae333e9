"""What cli/silence_coverage.py sends EC2, held to EC2's own model by botocore's Stubber: the
tag filters of every provisioning path, and node names from series anyone may write sent only
when they are names. EC2 reads ``*`` and ``?`` in a filter value as wildcards (EC2 User Guide,
"List and filter your resources"), which moto does not, so a Stubber holds the request."""

from typing import Any

import boto3
from botocore.stub import Stubber

from cli.silence_coverage import read_uncovered

RUNNING = {"Name": "instance-state-name", "Values": ["running"]}
EMPTY: dict[str, Any] = {"Reservations": []}


def test_node_names_with_wildcards_are_never_sent_as_filter_values() -> None:
    ec2 = boto3.client(
        "ec2", region_name="us-west-2", aws_access_key_id="t", aws_secret_access_key="t"
    )
    stubber = Stubber(ec2)
    stubber.add_response(
        "describe_instances",
        EMPTY,
        {"Filters": [{"Name": "tag-key", "Values": ["kubernetes.io/cluster/ml-prod"]}, RUNNING]},
    )
    stubber.add_response(
        "describe_instances",
        EMPTY,
        {
            "Filters": [
                {
                    "Name": "tag-key",
                    "Values": [
                        "eks:cluster-name",
                        "eks:eks-cluster-name",
                        "alpha.eksctl.io/cluster-name",
                        "eksctl.cluster.k8s.io/v1alpha1/cluster-name",
                    ],
                },
                {"Name": "tag-value", "Values": ["ml-prod"]},
                RUNNING,
            ]
        },
    )
    # Only the well-formed names and ids, sorted; "*", "ip-*", "?" and the id with a
    # wildcard would each match instances of any cluster.
    stubber.add_response(
        "describe_instances",
        EMPTY,
        {"Filters": [{"Name": "instance-id", "Values": ["i-0123456789abcdef0"]}, RUNNING]},
    )
    stubber.add_response(
        "describe_instances",
        EMPTY,
        {
            "Filters": [
                {
                    "Name": "private-dns-name",
                    "Values": ["ip-10-0-1-7.us-west-2.compute.internal"],
                },
                RUNNING,
            ]
        },
    )
    with stubber:
        found = read_uncovered(
            ec2,
            "ml-prod",
            ("x86_64",),
            seen_ids={"i-0123456789abcdef0", "i-*", "*"},
            seen_names={"*", "ip-*", "?", "ip-10-0-1-7.us-west-2.compute.internal"},
        )
        stubber.assert_no_pending_responses()
    assert found == ()
