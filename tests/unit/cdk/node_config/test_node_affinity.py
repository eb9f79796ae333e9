"""The node affinity matcher against Kubernetes' own statement of the rules
(cdk/node_config/node_affinity.py quotes them): terms ORed, expressions ANDed, an empty term
matches nothing, NotIn and DoesNotExist match a node without the key, Gt and Lt compare
integers and match nothing else."""

import pytest

from cdk.node_config.node_affinity import requirement_matches, selects, term_matches

NODE = {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.count": "8", "zone": "us-east-1a"}


@pytest.mark.parametrize(
    ("requirement", "matches"),
    [
        ({"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64", "amd64"]}, True),
        ({"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}, False),
        ({"key": "absent", "operator": "In", "values": ["x"]}, False),
        ({"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["arm64"]}, True),
        ({"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["amd64"]}, False),
        # "(4) The operator is DoesNotExist or NotIn and Labels does not have the key."
        ({"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]}, True),
        ({"key": "zone", "operator": "Exists"}, True),
        ({"key": "absent", "operator": "Exists"}, False),
        ({"key": "absent", "operator": "DoesNotExist"}, True),
        ({"key": "zone", "operator": "DoesNotExist"}, False),
        ({"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["0"]}, True),
        ({"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["8"]}, False),
        ({"key": "nvidia.com/gpu.count", "operator": "Lt", "values": ["9"]}, True),
        ({"key": "nvidia.com/gpu.count", "operator": "Lt", "values": ["8"]}, False),
        # A label that is not an integer, or no label, matches neither Gt nor Lt.
        ({"key": "zone", "operator": "Gt", "values": ["0"]}, False),
        ({"key": "zone", "operator": "Lt", "values": ["0"]}, False),
        ({"key": "absent", "operator": "Gt", "values": ["-1"]}, False),
    ],
)
def test_each_operator_as_kubernetes_matches_it(requirement: dict, matches: bool) -> None:  # type: ignore[type-arg]
    assert requirement_matches(requirement, NODE) is matches


def test_integers_are_go_s_parse_int() -> None:
    for value, matches in (
        ("+8", True),
        ("08", True),
        ("8.0", False),
        ("٨", False),
        ("9" * 20, False),
    ):
        labels = {"n": value}
        assert (
            requirement_matches({"key": "n", "operator": "Gt", "values": ["0"]}, labels) is matches
        )


def test_terms_are_ored_and_expressions_anded() -> None:
    amd64 = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
    arm64 = {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
    gpus = {"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["0"]}
    assert term_matches({"matchExpressions": [amd64, gpus]}, NODE)
    assert not term_matches({"matchExpressions": [arm64, gpus]}, NODE)
    assert selects([{"matchExpressions": [arm64]}, {"matchExpressions": [gpus]}], NODE)
    assert not selects([{"matchExpressions": [arm64]}], NODE)


def test_an_empty_term_or_no_term_matches_no_node() -> None:
    assert not term_matches({"matchExpressions": []}, NODE)
    assert not term_matches({}, NODE)
    assert not selects([], NODE)
    assert not selects([{"matchExpressions": []}], NODE)


def test_what_it_cannot_judge_is_refused() -> None:
    with pytest.raises(ValueError, match="'Equals'"):
        requirement_matches({"key": "zone", "operator": "Equals", "values": ["x"]}, NODE)
    with pytest.raises(ValueError, match="matchFields"):
        term_matches(
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}, NODE
        )
