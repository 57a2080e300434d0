"""Nothing in the repository's front matter names a file that does not exist: every repository path named in
pyproject.toml, .ci/*, README.md, tests/README.md, benchmarks/README.md and docs/**/*.md is there, and every
extra an install line names (`'.[test,redis]'`) is one pyproject.toml declares.

What counts as a path reference (anywhere in those files: prose, code spans, code blocks, comments):
  * a word with a slash whose first part is a folder of the repository, of the naming file's folder, of
    server/neardup (`core/errors.py`, as the docs write the server's modules), of client/neardup_client, of
    tests/ or of benchmarks/ (`lib/server_process.py`), or of server/ (`neardup/ui/app.py`): it must name a file or
    folder under one of them. A word whose first part is no such folder (`grpc/_server.py`, a dependency's module)
    is not a reference: a path into a folder that was removed whole is not caught.
  * a bare file name of source or configuration (.py, .c, .h, .proto, .toml, .yml, .yaml, .sh, .js, .cfg, .html,
    .css): some file of the repository must have that name. Bare data and text names (`corpus.jsonl`, `a.txt`,
    `harness.json`) are examples or benchmark outputs, not references.
  * not: URLs, words with a placeholder (`*`, `{`, `<`, `$`, `...`, or an upper-case word of PLACEHOLDERS, as in
    `benchmarks/NAME.py`), and the EXCEPTIONS below.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.fast  # reads files only

def sources(root: Path = ROOT) -> list[Path]:
    """The files whose references are checked (not docs/results/: the benchmarks' reports, which they write)."""
    docs = sorted(path for path in (root / "docs").rglob("*.md") if "results" not in path.relative_to(root).parts)
    return [root / "pyproject.toml", *sorted(path for path in (root / ".ci").iterdir() if path.is_file()),
            root / "README.md", root / "tests" / "README.md", root / "benchmarks" / "README.md", *docs]


#: Not part of the repository's files: what a walk passes over.
NOT_THE_REPOSITORY = {".git", ".venv", "build", "dist", "node_modules", "__pycache__", "site", ".pytest_cache",
                      ".hypothesis"}
#: Folders whose folders a relative path may start from (besides the repository and the naming file's folder).
BASES = ("server/neardup", "client/neardup_client", "tests", "benchmarks", "server")
BARE_SUFFIXES = ("py", "c", "h", "proto", "toml", "yml", "yaml", "sh", "js", "cfg", "html", "css")
#: Upper-case words the docs use for "a name here": benchmarks/NAME.py, out/STEM.json, neardup-COMMAND.md.
PLACEHOLDERS = {"NAME", "STEM", "COMMIT", "COMMAND", "SPLIT", "FILE", "DIR", "PATH"}
#: Words that look like references and are not, each with why.
EXCEPTIONS = {
    "Node.js": "the JavaScript runtime's name, not a file",
    "docs/s": "a rate: documents per second",
}
#: Path prefixes that name files made by running something, not files of the repository, each with why.
GENERATED = {
    "benchmarks/out": "what the benchmarks write (ignored by .gitignore; the docs read copies in docs/results/)",
}

WORD = re.compile(r"(?<![\w./~$@:-])(\.?[A-Za-z_][\w.-]*(?:/[\w.-]+)*/?)(?![\w/*{<$-])")
URL_BEFORE = re.compile(r"[a-z][a-z0-9+.-]*://\S*$")


def _repository(root: Path) -> tuple[set[str], set[str]]:
    """Every file and folder of the repository (relative, posix), and every file name; not what is GENERATED."""
    paths, names = set(), set()
    for folder, folders, files in os.walk(root):
        here = Path(folder).relative_to(root)
        folders[:] = [name for name in folders if name not in NOT_THE_REPOSITORY and not name.endswith(".egg-info")
                      and (here / name).as_posix() not in GENERATED]
        paths.update((here / name).as_posix() for name in folders + files)
        names.update(files)
    return paths, names


def references(path: Path, root: Path, paths: set[str]) -> list[tuple[int, str, list[str]]]:
    """(line, word, the places it may name) for each path reference in the file (module doc); paths: the
    repository's."""
    own = path.parent.relative_to(root).as_posix()
    bases = ["", "" if own == "." else own, *BASES]
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in WORD.finditer(line):
            word = match.group(1).rstrip(".")
            if URL_BEFORE.search(line[:match.start()]) or word in EXCEPTIONS or "..." in word:
                continue
            if set(re.findall(r"[A-Z]{3,}", word)) & PLACEHOLDERS:
                continue
            bare = word.rstrip("/")
            if "/" in bare:
                first = bare.split("/")[0]
                places = [f"{base}/{bare}" if base else bare for base in bases
                          if (f"{base}/{first}" if base else first) in paths]
                if places:
                    found.append((number, word, places))
            elif bare.rsplit(".", 1)[-1] in BARE_SUFFIXES and "." in bare[1:]:
                found.append((number, word, []))
    return found


def missing(root: Path = ROOT) -> list[str]:
    """Each reference that names nothing, as FILE:LINE: WORD."""
    paths, names = _repository(root)
    problems = []
    for source in sources(root):
        for number, word, places in references(source, root, paths):
            bare = word.rstrip("/")
            if any(bare == prefix or bare.startswith(prefix + "/") for prefix in GENERATED):
                continue
            exists = any(place in paths for place in places) if places else bare in names
            if not exists:
                problems.append(f"{source.relative_to(root)}:{number}: {word}")
    return problems


def test_every_path_the_front_matter_names_exists():
    problems = missing()
    assert not problems, "names of files that do not exist (tests/docs/test_paths.py says what counts):\n" + \
        "\n".join(problems)


def test_every_extra_an_install_line_names_is_declared():
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = []
    for source in sources():
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            for extras in re.findall(r"(?:^|[\s'\"])(?:\.|neardup)\[([\w,\s-]+)\]", line):
                named += [(f"{source.relative_to(ROOT)}:{number}", extra.strip()) for extra in extras.split(",")]
    assert len(named) >= 2, named  # .ci/run and .ci/sanitize install extras
    unknown = [f"{where}: {extra}" for where, extra in named if extra not in declared]
    assert not unknown, f"extras pyproject.toml does not declare ({sorted(declared)}):\n" + "\n".join(unknown)


def test_a_stale_reference_is_found(tmp_path):
    """A repository laid out as this one is, whose docs name a removed module, a removed helper and an example."""
    for name in ["server/neardup/core/candidates.py", "tests/conftest.py", "benchmarks/lib/server_process.py",
                 "benchmarks/README.md", "tests/README.md", "pyproject.toml", ".ci/run"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "README.md").write_text("Counting is in `core/candidates.py`, once in core/similar.py.\n"
                                        "See [the helper](benchmarks/lib/server_process.py) and `lib/server_process.py`.\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(
        "```\ntests/\n  conftest.py\n  serverproc.py   real processes\n```\n"
        "Run `neardup index corpus.jsonl`, write benchmarks/out/x.json, read benchmarks/NAME.py, "
        "see https://example.org/core/nowhere.py and grpc/_server.py, on Node.js at 100 docs/s.\n")
    assert missing(tmp_path) == ["README.md:1: core/similar.py", "docs/index.md:4: serverproc.py"]
