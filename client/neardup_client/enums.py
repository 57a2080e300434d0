"""The contract's enums under the names every neardup interface uses ("containment", "greedy").

The names are derived from the proto's value names (METRIC_CONTAINMENT → "containment"), so this module is the
one mapping between the two; the server's converters, this client and both CLIs use it, and a test holds the
names equal to the server core's (reference.METRICS, reference.GROUPINGS).
"""
from __future__ import annotations

from .v1 import neardup_pb2 as pb


def _names(enum, prefix: str) -> dict[int, str]:
    return {value: name.removeprefix(prefix).lower() for name, value in enum.items() if value != 0}


#: proto value → name, without the UNSPECIFIED value (0: the server's default).
METRIC_NAMES = _names(pb.Metric, "METRIC_")
GROUPING_NAMES = _names(pb.Grouping, "GROUPING_")
METRICS = tuple(METRIC_NAMES.values())
GROUPINGS = tuple(GROUPING_NAMES.values())
#: What each name means, for every command's help (both command lines take their --metric and --grouping help
#: from here; a test holds the keys equal to the proto's names).
METRIC_HELP = {
    "containment": "shared shingles over the shorter text's",
    "jaccard": "shared shingles over the union of both texts'",
    "hamming": "1 - differing bits / 64 of a simhash store's fingerprints, its only metric",
    "fields": "an items store's weighted mean of its per-field similarities, its only metric",
    "mutual": "shared shingles over the longer text's (the smaller of the two containments)",
}
GROUPING_HELP = {
    "greedy": "drop a result only as a duplicate of a kept one",
    "components": "transitive groups, the best-ranked member kept",
    "complete": "complete linkage in rank order, every two members of a group near-duplicates; the best-ranked "
                "member kept",
}


def described(helps: dict[str, str]) -> str:
    """'name: meaning; name: meaning', for an option's help."""
    return "; ".join(f"{name}: {meaning}" for name, meaning in helps.items())


#: name → proto value
METRIC_VALUES = {name: value for value, name in METRIC_NAMES.items()}
GROUPING_VALUES = {name: value for value, name in GROUPING_NAMES.items()}


def metric_value(name: str) -> int:
    """The proto value of a metric name; ValueError naming the choices for any other."""
    return _value(name, METRIC_VALUES, "metric")


def grouping_value(name: str) -> int:
    """The proto value of a grouping name; ValueError naming the choices for any other."""
    return _value(name, GROUPING_VALUES, "grouping")


def _value(name: str, values: dict[str, int], what: str) -> int:
    try:
        return values[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown {what} {name!r}; use one of {', '.join(values)}") from None
