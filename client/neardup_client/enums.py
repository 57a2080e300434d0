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


def metric_value(name: str) -> int:
    """The proto value of a metric name; ValueError naming the choices for any other."""
    return _value(name, METRIC_NAMES, "metric")


def grouping_value(name: str) -> int:
    """The proto value of a grouping name; ValueError naming the choices for any other."""
    return _value(name, GROUPING_NAMES, "grouping")


def _value(name: str, names: dict[int, str], what: str) -> int:
    for value, known in names.items():
        if known == name:
            return value
    raise ValueError(f"unknown {what} {name!r}; use one of {', '.join(names.values())}")
