"""Option types the server's commands share: a refused value is a usage error (exit code 2) before anything is
read."""
from __future__ import annotations

import argparse

from ..core.errors import InvalidArgument


def checked(convert, check):
    """An argparse type: convert(text), then check(value) raises InvalidArgument when the value is refused, so a
    bad option is a usage error (exit code 2) before anything is read."""
    def parse(text: str):
        value = convert(text)
        try:
            check(value)
        except InvalidArgument as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return value
    parse.__name__ = convert.__name__  # argparse names it in "invalid int value"
    return parse


def at_least(minimum: int):
    def check(value: int) -> None:
        if value < minimum:
            raise InvalidArgument(f"must be at least {minimum}, got {value}")
    return checked(int, check)


def positive(value: float) -> None:
    if not value > 0:  # NaN too
        raise InvalidArgument(f"must be more than 0, got {value}")


def fraction(value: float) -> None:
    if not 0.0 <= value <= 1.0:  # NaN too
        raise InvalidArgument(f"must be in [0, 1], got {value}")


