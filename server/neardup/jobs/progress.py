"""Progress of a long command on stderr, one rule for every command that shows it (the flag is
cli/options.add_progress_argument): bars on a terminal, elsewhere one summary line when the work is done.

A command runs its work inside reporting(); a step of the work is a Stage (progress(); counted_steps() for work
that reports its steps' counts itself). Outside reporting() (the jobs called from Python) a Stage draws its bar on
a terminal and is silent elsewhere. The rule: docs/OPERATING.md ("Progress").
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator


def _tqdm():
    """tqdm, imported when a bar is drawn (`neardup --help`, `dedup` and `info` never import it)."""
    from tqdm import tqdm

    # tqdm's monitor thread (it only retunes a bar's redraw interval) outlives the bars; a worker forked while it
    # holds tqdm's lock would wait on that lock for ever. Without it, a job that forks workers forks one thread.
    tqdm.monitor_interval = 0
    return tqdm


class _Run:
    """One command's progress: whether bars are drawn, and its steps for the summary line."""

    def __init__(self, command: str | None, bars: bool):
        self.command, self.bars = command, bars
        self.stages: list[Stage] = []
        self.started = time.monotonic()

    def summary(self) -> str:
        """`neardup index: sketching 6 lines (5 sketched, 1 skipped: malformed); writing 5 of 5 docs; ... in 0.1 s`"""
        steps = "; ".join(stage.describe() for stage in self.stages)
        return f"{self.command}: {steps} in {time.monotonic() - self.started:.1f} s"


_current: _Run | None = None


def _run() -> _Run:
    return _current if _current is not None else _Run(None, sys.stderr.isatty())


@contextmanager
def reporting(command: str, bars: bool | None = None, summary: bool = True) -> Iterator[None]:
    """The progress of one run of `command` ("neardup index"): bars when `bars` is True, the summary line when it is
    False, and by whether stderr is a terminal when it is None (the default of every command). The summary line is
    written only when the work is done: a failed or interrupted run says why in its error line instead. A command
    that writes a summary line of its own on stderr (pairs, cluster) passes summary=False: that line is the one."""
    global _current
    previous = _current
    _current = run = _Run(command, sys.stderr.isatty() if bars is None else bars)
    try:
        yield
    finally:
        _current = previous
    if summary and not run.bars and run.stages:
        print(run.summary(), file=sys.stderr, flush=True)


class Stage:
    """One step of a command's work, counted: a bar on stderr where bars are drawn, else its final count goes into
    the command's summary line. `note` says what the count holds (`5 sketched, 1 skipped: malformed`)."""

    def __init__(self, desc: str, total: int | None, unit: str, run: _Run):
        self.desc, self.total, self.unit, self.n, self.note = desc, total, unit, 0, ""
        self._bar = None
        if run.bars:
            self._bar = _tqdm()(desc=desc, total=total, unit=unit, file=sys.stderr, mininterval=0.5,
                                smoothing=0.1)
        else:
            run.stages.append(self)

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)

    def set_note(self, note: str) -> None:
        self.note = note
        if self._bar is not None:
            self._bar.set_postfix_str(note, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def describe(self) -> str:
        counted = f"{self.n:,}" + (f" of {self.total:,}" if self.total is not None else "")
        return f"{self.desc} {counted} {self.unit.strip()}" + (f" ({self.note})" if self.note else "")

    def __enter__(self) -> "Stage":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress(desc: str, total: int | None = None, unit: str = " docs") -> Stage:
    """A step of the current command's work (where it shows: docs/OPERATING.md, "Progress")."""
    return Stage(desc, total, unit, _run())


@contextmanager
def counted_steps(unit: str = " articles") -> Iterator[Callable[[str, int], None]]:
    """A callback for work that reports (step, count so far), as a search index build does: each step a Stage of
    the current command, closed on leaving."""
    stages: dict[str, Stage] = {}

    def report(step: str, count: int) -> None:
        stage = stages.get(step) or stages.setdefault(step, progress(step, None, unit))
        stage.update(count - stage.n)

    try:
        yield report
    finally:
        for stage in stages.values():
            stage.close()


def warn(message: str) -> None:
    """A line on stderr while a bar may be showing: on a terminal tqdm erases the bar, writes the line and draws the
    bar again below it; where no bar is drawn, the line alone."""
    if _run().bars:
        _tqdm().write(message, file=sys.stderr)
    else:
        print(message, file=sys.stderr, flush=True)
