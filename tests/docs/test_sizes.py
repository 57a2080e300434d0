"""No module of the repository is larger than a reader takes in at once without saying why: a Python module over
700 lines, or a C file over 1,000, carries a note among its first lines, marked "Whole on purpose:", that says why
it stays whole; otherwise it is split along its seams (as core/_search.c was: index, file format, Python glue).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.fast  # reads files only

#: Lines a module may have before it needs a note, by suffix.
LIMITS = {".py": 700, ".c": 1000, ".h": 1000}
#: What the note starts with, among the module's first NOTE_LINES lines (room for a shebang or a coding line).
MARKER = "Whole on purpose:"
NOTE_LINES = 3
#: Where the modules are: the repository's source folders and its top-level scripts.
FOLDERS = ("server", "client", "tests", "benchmarks")
#: Not the repository's files: what a build, an install or a run leaves there (benchmarks write to out/).
NOT_SOURCES = {"out", "build", "dist", "__pycache__", "node_modules", ".venv", ".pytest_cache", ".hypothesis"}
#: Files over the limit without a note for now, each with why; a file that no longer needs its entry fails the
#: test until the entry is gone.
PENDING: dict[str, str] = {}


def modules(root: Path) -> list[Path]:
    """Every Python and C module under FOLDERS, and the top-level Python scripts (setup.py)."""
    found = [path for path in root.glob("*.py")]
    for folder in FOLDERS:
        for place, folders, files in os.walk(root / folder):
            folders[:] = [name for name in folders if name not in NOT_SOURCES and not name.endswith(".egg-info")]
            found += [Path(place) / name for name in files if Path(name).suffix in LIMITS]
    return sorted(found)


def oversized(root: Path = ROOT) -> list[str]:
    """Each module over its limit without the note, as PATH: LINES lines (limit LIMIT)."""
    problems = []
    for path in modules(root):
        lines = path.read_text(encoding="utf-8").splitlines()
        limit = LIMITS[path.suffix]
        if len(lines) > limit and not any(MARKER in line for line in lines[:NOTE_LINES]):
            problems.append(f"{path.relative_to(root).as_posix()}: {len(lines)} lines (limit {limit})")
    return problems


def test_no_module_is_over_its_size_without_a_note_saying_why_it_stays_whole():
    problems = [problem for problem in oversized() if problem.split(":")[0] not in PENDING]
    assert not problems, (f"split these along their seams, or say at the top why each stays whole "
                          f"(a line with {MARKER!r}):\n" + "\n".join(problems))


def test_every_pending_file_is_still_over_its_size_without_a_note():
    over = {problem.split(":")[0] for problem in oversized()}
    done = sorted(path for path in PENDING if path not in over)
    assert not done, f"no longer over its size without a note: remove from PENDING in {__file__}: {done}"


def test_a_large_module_without_a_note_is_found(tmp_path):
    """A repository laid out as this one is: large modules with and without a note, one in a build folder."""
    files = {
        "server/neardup/core/big.py": "x = 1\n" * 701,
        "server/neardup/core/noted.py": f'# {MARKER} one table, read top to bottom\n"""Doc."""\n' + "x = 1\n" * 800,
        "server/neardup/core/late_note.py": "x = 1\n" * 5 + f"# {MARKER} too far down\n" + "x = 1\n" * 800,
        "server/neardup/core/small.py": "x = 1\n" * 700,
        "server/neardup/core/_big.c": "int x;\n" * 1001,
        "server/neardup/core/_noted.c": f"/* {MARKER} one state machine */\n" + "int x;\n" * 1200,
        "tests/core/test_big.py": "x = 1\n" * 900,
        "client/build/lib/copy.py": "x = 1\n" * 900,
        "setup.py": "x = 1\n" * 701,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert oversized(tmp_path) == [
        "server/neardup/core/_big.c: 1001 lines (limit 1000)",
        "server/neardup/core/big.py: 701 lines (limit 700)",
        "server/neardup/core/late_note.py: 806 lines (limit 700)",
        "setup.py: 701 lines (limit 700)",
        "tests/core/test_big.py: 900 lines (limit 700)",
    ]
