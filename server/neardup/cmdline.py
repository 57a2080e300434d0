"""What the server-side commands (`neardup index`, `neardup pairs`) share: option types that make a refused value a
usage error before anything is read, and the progress bar on stderr."""
from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from .errors import InvalidArgument

_LOG_INTERVAL = 10.0  # seconds between progress lines where stderr is no terminal


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


class _LogLines:
    """stderr where it is no terminal (a log file, a pipe): each of tqdm's redraws of its bar ("\r" + bar) becomes
    a line of its own and its erasures (blanks) are dropped, so that no warning is written into a bar's line."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> None:
        line = text.strip("\r\n ")
        if line:
            self._stream.write(line + "\n")

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def progress(desc: str, total: int | None = None, unit: str = " docs", disable: bool = False) -> tqdm:
    """A progress bar on stderr: redrawn in place on a terminal, elsewhere a line every _LOG_INTERVAL seconds."""
    if sys.stderr.isatty():
        return tqdm(desc=desc, total=total, unit=unit, file=sys.stderr, mininterval=0.5, smoothing=0.1,
                    disable=disable)
    return tqdm(desc=desc, total=total, unit=unit, file=_LogLines(sys.stderr), mininterval=_LOG_INTERVAL,
                ascii=True, smoothing=0.1, disable=disable)


def warn(message: str) -> None:
    """A line on stderr while a bar may be showing: on a terminal tqdm erases the bar, writes the line and draws the
    bar again below it; elsewhere the bar's last line is already whole (_LogLines)."""
    tqdm.write(message, file=sys.stderr)
