"""Which nodes a required node affinity selects, from their labels, as the Kubernetes
scheduler decides it. Preflight asks it which GPU nodes the exporter's DaemonSet would miss;
the tests ask it the same of every provisioning path's nodes.

The rules, as Kubernetes states them:

- "If you specify multiple terms in nodeSelectorTerms associated with nodeAffinity types,
  then the Pod can be scheduled onto a node if one of the specified terms can be satisfied
  (terms are ORed). If you specify multiple expressions in a single matchExpressions field
  associated with a term in nodeSelectorTerms, then the Pod can be scheduled onto a node only
  if all the expressions are satisfied (expressions are ANDed)." (Kubernetes docs, "Assigning
  Pods to Nodes", https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/);
  "A null or empty node selector term matches no objects" (API reference, NodeSelectorTerm,
  k8s.io/api core/v1);
- a requirement (kubernetes/apimachinery pkg/labels/selector.go ``Requirement.Matches``):
  "(1) The operator is Exists and Labels has the Requirement's key. (2) The operator is In,
  Labels has the Requirement's key and Labels' value for that key is in Requirement's value
  set. (3) The operator is NotIn, Labels has the Requirement's key and Labels' value for that
  key is not in Requirement's value set. (4) The operator is DoesNotExist or NotIn and Labels
  does not have the Requirement's key. (5) The operator is GreaterThanOperator or
  LessThanOperator, and Labels has the Requirement's key and the corresponding value satisfies
  mathematical inequality"; a label value that does not parse as a 64-bit integer matches
  neither Gt nor Lt.
"""

from collections.abc import Mapping, Sequence
from typing import Any

_INT64 = (-(2**63), 2**63 - 1)


def _integer(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: an optional sign and decimal digits only."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit():
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


def requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = requirement["key"], requirement["operator"]
    values = list(requirement.get("values") or ())
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in {"Gt", "Lt"}:
        have = _integer(labels[key]) if present else None
        bound = _integer(values[0]) if len(values) == 1 else None
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    raise ValueError(f"node selector operator {operator!r} is not one Kubernetes knows")


def term_matches(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if term.get("matchFields"):
        raise ValueError("matchFields (a node's fields, not its labels) is not evaluated here")
    expressions = term.get("matchExpressions") or ()
    return bool(expressions) and all(requirement_matches(e, labels) for e in expressions)


def selects(terms: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """True when a node with ``labels`` satisfies the required node affinity ``terms``."""
    return any(term_matches(term, labels) for term in terms)
