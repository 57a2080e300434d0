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
