"""Two builds of neardup measured in one run (A/B): where each side's code comes from, and what the rounds say.

A side is a Python interpreter whose `neardup` is the code measured. Side A is this environment (the checkout as
installed in it) unless a revision is named; any revision is installed from a `git archive` of that commit into
an environment of its own, kept under `benchmarks/out/revisions/COMMIT/` for the next run. The revision's
environment reuses this environment's third-party packages (a `.pth` line after its own site-packages) and installs
only neardup and neardup-client, so the two sides differ by the project's code alone, not by a grpcio or protobuf
that pip resolved on another day.

Each round measures both sides (the order alternates: A B, B A, ...), and every figure is a ratio to the same
server's empty call in the same round; summarize() gives each figure's median and spread over the rounds per side,
and the paired difference B − A. A difference whose range over the rounds holds 0 is within the noise.
"""
from __future__ import annotations

import dataclasses
import filecmp
import shutil
import statistics
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Callable

from benchmarks.lib.paths import OUT, ROOT

#: Where installed revisions are kept, one folder per commit: src/ (the archive) and venv/.
REVISIONS = OUT / "revisions"
_INSTALLED = "installed"  # written last: a folder without it is an interrupted install, done again


class RevisionError(Exception):
    """A revision that cannot be measured: not a commit, its install failed, or this environment is stale."""


@dataclasses.dataclass(frozen=True)
class Side:
    """One build under measurement: its name in the report, the commit, and the interpreter that runs it."""

    label: str
    commit: str
    python: str
    dirty: bool = False  # this environment, with uncommitted changes in the checkout

    @property
    def neardup(self) -> list[str]:
        """The command line of this side's `neardup` (what tests/server_process.py's Server starts)."""
        return [self.python, "-m", "neardup.cli"]

    def describe(self) -> str:
        return f"{self.label} ({self.commit[:12]}{' + uncommitted changes' if self.dirty else ''})"


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RevisionError(f"git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout.strip()


def commit_of(revision: str) -> str:
    """The full commit a revision names (a hash, a branch, HEAD~3, a tag)."""
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    except RevisionError:
        raise RevisionError(f"{revision!r} names no commit of this repository") from None


def _built_from(folder: Path, stem: str) -> Path | None:
    """The installed extension a C source of that stem is compiled into: the one of the same name, or the one whose
    name it extends (_search_file.c and _search_index.c are parts of _search)."""
    names = {built.name.split(".")[0]: built for built in folder.glob("*.so")}
    owners = [name for name in names if stem == name or stem.startswith(name + "_")]
    return names[max(owners, key=len)] if owners else None


def this_environment() -> Side:
    """This interpreter's neardup, checked to be the checkout's: a module of server/neardup that differs from the
    installed one, or a C source newer than its installed build, means the measurement would not be of the
    checkout (RevisionError says to reinstall)."""
    import neardup

    installed = Path(neardup.__file__).resolve().parent
    source = ROOT / "server" / "neardup"
    if installed != source.resolve():
        for module in sorted(source.rglob("*.py")):
            copy = installed / module.relative_to(source)
            if not copy.exists() or not filecmp.cmp(module, copy, shallow=False):
                raise RevisionError(f"this environment's neardup is not the checkout's ({module.relative_to(ROOT)} "
                                    f"differs): reinstall it with `{sys.executable} -m pip install .`")
        for c_source in sorted(source.rglob("_*.c")):
            built = _built_from(installed.joinpath(c_source.relative_to(source).parent), c_source.stem)
            if built is None or built.stat().st_mtime < c_source.stat().st_mtime:
                raise RevisionError(f"{c_source.relative_to(ROOT)} is newer than its installed build: reinstall "
                                    f"with `{sys.executable} -m pip install .`")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no", "--", "server", "client", "setup.py",
                      "pyproject.toml"))
    return Side("this checkout", commit_of("HEAD"), sys.executable, dirty)


def install(revision: str, revisions: Path = REVISIONS, say: Callable[[str], None] = print) -> Side:
    """The revision installed in an environment of its own (kept: a second run reuses it)."""
    commit = commit_of(revision)
    place = revisions / commit
    python = place / "venv" / "bin" / "python"
    side = Side(revision, commit, str(python))
    if (place / _INSTALLED).exists():
        return side
    say(f"installing {revision} ({commit[:12]}) into {place} ...")
    shutil.rmtree(place, ignore_errors=True)
    source = place / "src"
    source.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", commit], stdout=subprocess.PIPE)
    unpacked = subprocess.run(["tar", "-x", "-C", str(source)], stdin=archive.stdout, capture_output=True)
    archive.stdout.close()
    if archive.wait() != 0 or unpacked.returncode != 0:
        raise RevisionError(f"git archive {commit[:12]} could not be unpacked: {unpacked.stderr.decode()[-500:]}")
    _run([sys.executable, "-m", "venv", "--without-pip", str(place / "venv")], "python -m venv")
    own = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip())
    # after its own site-packages: the revision's neardup first, this environment's third-party packages next
    (own / "zz-ab-shared-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
          str(source / "client"), str(source)], f"pip install of {revision}")
    _run([str(python), "-c", "import neardup.cli, neardup_client"], f"importing {revision}'s neardup")
    (place / _INSTALLED).write_text(commit + "\n")
    return side


def add_side_arguments(parser) -> None:
    """--against (side B) and --at (side A) of an A/B tool's command line."""
    parser.add_argument("--against", metavar="REV", help="side B: a revision (commit, branch, tag) installed from "
                        "git into an environment of its own under benchmarks/out/revisions/")
    parser.add_argument("--at", metavar="REV", help="side A: a revision installed likewise (default: this "
                        "environment's neardup, which must be the checkout's)")


def sides(at: str | None, against: str | None, say: Callable[[str], None] = print) -> dict[str, Side]:
    """"a": `at` installed, or this environment; "b": `against` installed, when named."""
    chosen = {"a": install(at, say=say) if at else this_environment()}
    if against:
        chosen["b"] = install(against, say=say)
    return chosen


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RevisionError(f"{what} failed:\n{(done.stderr or done.stdout)[-2000:]}")


# --- what the rounds say ------------------------------------------------------------------------------------------

def order(round_number: int, sides: list[str]) -> list[str]:
    """Which side goes first in a round: A B, then B A, ...; a drift within a round touches both alike."""
    return sides if round_number % 2 == 0 else sides[::-1]


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "rounds": values}


def summarize(rounds: list[dict[str, dict[str, float]]]) -> dict:
    """rounds: per round, side → figure → ratio. Per side and figure the median and spread over rounds; with two
    sides, per figure the paired difference (second − first) and whether its range holds 0."""
    sides = list(rounds[0])
    names = list(rounds[0][sides[0]])
    summary = {"sides": {side: {name: spread([r[side][name] for r in rounds]) for name in names} for side in sides}}
    if len(sides) == 2:
        first, second = sides
        summary["difference"] = {}
        for name in names:
            row = spread([r[second][name] - r[first][name] for r in rounds])
            row["within_spread"] = row["min"] <= 0.0 <= row["max"]
            summary["difference"][name] = row
    return summary
