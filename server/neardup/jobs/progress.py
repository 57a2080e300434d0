"""Progress of a long job on stderr: a bar redrawn in place on a terminal, elsewhere a line every few seconds;
warnings written between its redraws."""
from __future__ import annotations

import sys

from tqdm import tqdm

# tqdm's monitor thread (it only retunes a bar's redraw interval) outlives the bars; a worker forked while it
# holds tqdm's lock would wait on that lock for ever. Without it, a job that forks workers forks one thread.
tqdm.monitor_interval = 0

_LOG_INTERVAL = 10.0  # seconds between progress lines where stderr is no terminal


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
