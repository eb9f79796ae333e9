"""The rules a dashboard widget's PromQL query is held to, read from the query's text, and the
most series it can draw.

What AWS documents of every PromQL query CloudWatch answers ("QueryMetrics", CloudWatch User
Guide, https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-API-QueryMetrics.html,
and its limits as ``lambdas.shared.promql`` reads them):

- "The expression must select a metric by name ... Selecting series only by labels, without a
  metric name, is not supported": every selector names its metric (``__name__="..."`` or a
  quoted name first).
- "A single /api/v1/query or /api/v1/query_range response can return up to 500 unique time
  series": a response may drop series past 500, so a widget's query must be bounded at 500 or
  fewer by its own text, whatever the fleet.
- "24-hour scan windows": no range selector reaches back more than 24 hours.

How many series a query draws over a range (``series_bound``): ``topk(n, ...)`` picks n at
every step, so over a range in which the ranking changes it draws more than n; it is bounded
only where its ranking is evaluated once (every selector inside it ``@ end()`` or
``@ start()``). ``A and on (keys) B``, with A aggregated ``by (keys)``, draws at most B's
series; an aggregation without ``by`` draws one; ``A / B`` and ``A - B`` (one-to-one) no more
than the fewer side's.
"""

import re
from typing import Final

from lambdas.shared.promql import MAX_SCAN_S, MAX_SERIES

_UNITS: Final = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_RANGE: Final = re.compile(r"\[(\d+)(ms|s|m|h|d|w|y)\]")
#: A selector, its range and its ``@`` modifier, if any.
_SELECTOR: Final = re.compile(
    r"""\{(?P<matchers>(?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}
    (?:\[[^\]]*\])?(?P<at>\s*@\s*(?:end|start)\(\))?""",
    re.VERBOSE,
)
#: A metric name: ``__name__="..."``, the name alone, or ``__name__=~`` a pattern of a finite
#: set of names (no ``.``, ``*`` or ``+``: vLLM's and Ray Serve LLM's spellings of one name,
#: contract/serving.py ``name_regex``).
_NAMED: Final = re.compile(
    r'^\s*(?:__name__\s*=\s*"[^"]+"|__name__\s*=~\s*"[^".*+]+"|"[^"]+"\s*(?:,|$))'
)
#: The head of an aggregation over the rest of the query: its operator, grouping and the
#: parenthesis its argument opens with.
_AGGREGATION: Final = re.compile(
    r"^(?P<op>sum|avg|min|max|count|group|stddev|stdvar)\s*(?:by\s*\((?P<by>[^)]*)\))?\s*\("
)
_PICK: Final = re.compile(r"^(?:topk|bottomk)\s*\(\s*(?P<n>\d+)\s*,")
_AND_ON: Final = re.compile(r"^on\s*\((?P<keys>[^)]*)\)\s*(?P<right>.*)$", re.DOTALL)
_SCALED: Final = re.compile(r"^(?P<vector>.*?)\s*\*\s*\d+(?:\.\d+)?$", re.DOTALL)


def range_seconds(query: str) -> list[float]:
    """Every range selector's reach, in seconds (``[5m]``: 300)."""
    return [int(n) * _UNITS[unit] for n, unit in _RANGE.findall(query)]


def lookback_seconds(query: str) -> float:
    """How far before a step the query reads: its longest range selector not pinned by ``@``
    (a pinned one reads before the pinned time, the same at every step)."""
    unpinned = [m.group(0) for m in _SELECTOR.finditer(query) if not m["at"]]
    return max((s for text in unpinned for s in range_seconds(text)), default=0.0)


def _matching(text: str, opening: int) -> int:
    """The index of the parenthesis closing the one at ``opening`` (quotes skipped)."""
    depth, quoted, i = 0, False, opening
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _unwrapped(query: str) -> str:
    """The query without parentheses around the whole of it."""
    query = query.strip()
    while query.startswith("(") and _matching(query, 0) == len(query) - 1:
        query = query[1:-1].strip()
    return query


def _top_level(query: str, operator: str) -> tuple[str, str] | None:
    """(left, right) of the last `` <operator> `` outside parentheses and quotes, or None."""
    depth, quoted, found = 0, False, None
    for i, c in enumerate(query):
        if quoted:
            quoted = not (c == '"' and query[i - 1] != "\\")
        elif c == '"':
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and query.startswith(f" {operator} ", i):
            found = i
    if found is None:
        return None
    return query[:found], query[found + len(operator) + 2 :]


def _keys(text: str) -> frozenset[str]:
    return frozenset(k.strip() for k in text.split(",") if k.strip())


def _whole(head: "re.Match[str] | None", query: str) -> bool:
    """Whether the call ``head`` opens spans the whole query."""
    return head is not None and _matching(query, head.end() - 1) == len(query) - 1


def _per_key(vector: str, keys: frozenset[str]) -> bool:
    """Whether ``vector`` holds one series a key at most: aggregated by ``keys``, or one such
    divided by another (one-to-one matching keeps a series a key)."""
    vector = _unwrapped(vector)
    quotient = _top_level(vector, "/")
    if quotient is not None:
        return all(_per_key(side, keys) for side in quotient)
    head = _AGGREGATION.match(vector)
    if head is None or not _whole(head, vector) or head["by"] is None:
        return False
    return _keys(head["by"]) == keys


def _and_bound(left: str, right: str) -> int | None:
    """``left and on (keys) right``: at most right's series where left holds one series a key
    (``_per_key``), times a number or not."""
    on = _AND_ON.match(right.strip())
    if on is None:
        return None
    left = _unwrapped(left)
    scaled = _SCALED.match(left)
    left = _unwrapped(scaled["vector"]) if scaled else left
    if not _per_key(left, _keys(on["keys"])):
        return None
    return series_bound(on["right"])


def series_bound(query: str) -> int | None:
    """The most series ``query`` draws over a range, whatever the series it reads; None where
    its text does not bound it."""
    query = _unwrapped(query)
    both = _top_level(query, "and")
    if both is not None:
        return _and_bound(*both)
    for operator in ("/", "-"):
        sides = _top_level(query, operator)
        if sides is not None:  # one-to-one: no more series than the fewer side's
            bounds = [series_bound(side) for side in sides]
            return None if None in bounds else min(b for b in bounds if b is not None)
    pick = _PICK.match(query)
    if pick is not None and _matching(query, query.index("(")) == len(query) - 1:
        once = all(m["at"] for m in _SELECTOR.finditer(query[pick.end() :]))
        return int(pick["n"]) if once else None
    head = _AGGREGATION.match(query)
    if _whole(head, query) and head is not None and head["by"] is None:
        return 1
    return None


def rule_errors(title: str, query: str) -> list[str]:
    """The documented rules ``query`` breaks, each named with the widget's ``title``."""
    errors = []
    unnamed = [m["matchers"] for m in _SELECTOR.finditer(query) if not _NAMED.match(m["matchers"])]
    if unnamed or not _SELECTOR.search(query):
        errors.append(f"{title!r}: a PromQL selector without a metric name in {query!r}")
    bound = series_bound(query)
    if bound is None:
        errors.append(f"{title!r}: a PromQL query its text does not bound in {query!r}")
    elif bound > MAX_SERIES:
        errors.append(f"{title!r}: up to {bound} series, above the {MAX_SERIES} of one response")
    far = [s for s in range_seconds(query) if s > MAX_SCAN_S]
    if far:
        errors.append(f"{title!r}: a range of {max(far) / 3600:g} h beyond the 24-hour scan window")
    return errors
