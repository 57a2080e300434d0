"""The layer table (docs/layers.py, shown on the Architecture page) holds for the code: every import of every module
of server/neardup, those inside functions too, is one the table allows; and the checker finds a wrong one. And no
test module loads an optional back-end (redis, dask, pyarrow) when imported, so `pytest -m fast` collects with the
test extra alone."""
from __future__ import annotations

import ast
import functools
import importlib.util
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "server" / "neardup"

pytestmark = pytest.mark.fast  # reads files only


def _layers():
    spec = importlib.util.spec_from_file_location("neardup_docs_layers", ROOT / "docs" / "layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


layers = _layers()


def _tree(root: Path, files: dict[str, str]) -> Path:
    """A package `neardup` laid out like server/neardup under root, of the given files (path: source)."""
    package = root / "neardup"
    for name in ["__init__.py"] + [f"{layer.name}/__init__.py" for layer in layers.LAYERS]:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text('__version__ = "0"\n' if name == "__init__.py" else "")
    for name, source in files.items():
        (package / name).write_text(textwrap.dedent(source))
    return package


def test_every_import_of_server_neardup_is_one_the_layer_table_allows():
    problems = layers.check(PACKAGE)
    assert not problems, "imports the layer table (docs/layers.py) does not allow:\n" + \
        "\n".join(map(str, problems))


def test_every_layer_of_the_table_is_a_folder_of_server_neardup_and_every_folder_a_layer():
    folders = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert folders == layers.NAMES


def test_the_table_allows_no_circle():
    """Each layer may import only layers declared before it (innermost first), so no two layers can import each
    other, directly or round about."""
    seen = set()
    for layer in layers.LAYERS:
        inner = {name for name in layer.may_import if name in layers.NAMES}
        assert inner <= seen, f"{layer.name}/ may import {sorted(inner - seen)}, declared after it"
        seen.add(layer.name)


def test_a_planted_wrong_import_fails_naming_module_line_and_rule(tmp_path):
    package = _tree(tmp_path, {
        "core/sketch.py": """\
            import json
            from . import errors


            def sketch(text):
                from ..cli.main import main  # the wrong one: core reaching up to the command line
                return main
            """,
        "core/errors.py": "from .. import __version__\n",
        "store/lmdb.py": "from ..core import sketch\nfrom neardup.core.errors import __name__\n",
        "cli/main.py": "from ..ui import app\nfrom neardup_client.cli_framework import run\nimport neardup.store.lmdb\n",
        "ui/app.py": "from ..jobs import label\nfrom neardup_client import NearDupClient\n",
    })
    problems = layers.check(package)
    assert [str(problem) for problem in problems] == [
        "neardup/core/sketch.py:6: neardup.core.sketch imports neardup.cli.main.main: core/ may import nothing of "
        "neardup but core/ (docs/layers.py)"]


@pytest.mark.parametrize("path, source, imported, rule", [
    ("ui/labels.py", "def read():\n    from ..cli.label import read_records\n",
     "neardup.cli.label.read_records", "ui/ may import only jobs/"),
    ("jobs/index.py", "from neardup import service\n", "neardup.service", "jobs/ may import only runtime/"),
    ("store/redis.py", "from .. import runtime\n", "neardup.runtime", "store/ may import only core/ and store/"),
    ("service/server.py", "if True:\n    import neardup.cli.serve\n", "neardup.cli.serve",
     "service/ may import only runtime/"),
    ("jobs/train.py", "from neardup_client.cli_framework import CommandFailed\n",
     "neardup_client.cli_framework.CommandFailed", "jobs/ may import only"),
    ("core/kernel.py", "import neardup_client\n", "neardup_client", "core/ may import nothing"),
    ("runtime/view.py", "from ..helpers import fresh\n", "neardup.helpers.fresh", "runtime/ may import only"),
])
def test_each_kind_of_wrong_import_is_found(tmp_path, path, source, imported, rule):
    """Relative and absolute, `from PACKAGE import LAYER`, inside a function or a block, the client's command
    line outside cli/, a module of no layer."""
    package = _tree(tmp_path, {path: source, "helpers.py": ""})
    problems = [problem for problem in layers.check(package) if problem.path != "neardup/helpers.py"]
    assert len(problems) == 1, problems
    assert problems[0].imported == imported and problems[0].rule.startswith(rule), problems[0]
    assert problems[0].path == f"neardup/{path}" and problems[0].line == len(source.splitlines())


def test_a_module_outside_every_layer_is_reported(tmp_path):
    package = _tree(tmp_path, {"helpers.py": "import os\n"})
    (package / "extras").mkdir()
    (package / "extras" / "__init__.py").write_text("")
    assert [(problem.path, problem.rule.split(":")[0]) for problem in layers.check(package)] == [
        ("neardup/extras/__init__.py", "extras/ is no layer of the table (docs/layers.py)"),
        ("neardup/helpers.py", "a module directly in the package belongs to no layer")]


def test_the_architecture_page_shows_the_table_from_its_one_declaration():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "{{ layers }}" in page and "| layer | holds | may import |" not in page
    table = layers.markdown()
    for layer in layers.LAYERS:
        assert f"| `{layer.name}/` | {layer.holds} |" in table
    assert "| `ui/` |" in table and table.split("| `ui/` |")[1].split("\n")[0].endswith(
        "| `jobs/`, `runtime/`, `store/`, `core/`, the client (`neardup_client`, but its command line) |")


# --- optional back-ends: `pytest -m fast` with the test extra only --------------------------------------------------

#: The packages of the optional extras (redis; dask, with distributed and fsspec; parquet): a test module imports
#: them, and the server's modules that import them on load, in the test or fixture that uses them.
OPTIONAL = {"redis", "hiredis", "dask", "distributed", "fsspec", "pyarrow"}


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _top_level_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each import a module runs when it is loaded (its body, and `if`/`try` blocks there)."""
    found, pending = [], list(_parsed(path).body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body
    return found


def _skipped_without(path: Path) -> set[str]:
    """What the module skips itself without: `pytest.importorskip("redis", ...)` in its body."""
    return {node.value.args[0].value for node in _parsed(path).body
            if isinstance(node, (ast.Assign, ast.Expr)) and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "attr", None) == "importorskip" and node.value.args
            and isinstance(node.value.args[0], ast.Constant)}


def _mentions(path: Path, words: set[str]) -> bool:
    text = path.read_text(encoding="utf-8")
    return any(word in text for word in words)


def loaded_optional(tests: Path, package: Path) -> list[str]:
    """Each test module or helper that loads an optional back-end when imported (directly, or through a server
    module that imports one on load), as PATH:LINE: MODULE; a module that skips itself without it aside."""
    heavy = {".".join(("neardup", *path.relative_to(package).with_suffix("").parts))
             for path in package.rglob("*.py") if _mentions(path, OPTIONAL)
             and any(name.split(".")[0] in OPTIONAL for _, name in _top_level_imports(path))}
    # an import names what it imports, so a module that mentions none of these is not parsed (most are not)
    words = OPTIONAL | {module.rsplit(".", 1)[-1] for module in heavy}
    found = []
    for path in sorted(tests.rglob("*.py")):
        if not _mentions(path, words):
            continue
        skipped = _skipped_without(path)
        for line, name in _top_level_imports(path):
            root = name.split(".")[0]
            if (root in OPTIONAL or any(name == module or name.startswith(module + ".") for module in heavy)) \
                    and not (skipped & OPTIONAL):
                found.append(f"{path.relative_to(tests.parent)}:{line}: {name}")
    return found


def test_no_test_module_loads_an_optional_back_end_on_import():
    """So that `pytest -m fast` collects with only the test extra installed."""
    problems = loaded_optional(ROOT / "tests", PACKAGE)
    assert not problems, "import these in the test or fixture that uses them (tests/README.md):\n" + \
        "\n".join(problems)


def test_a_top_level_import_of_a_back_end_is_found(tmp_path):
    package = _tree(tmp_path / "server", {"store/redis.py": "import redis\n", "store/lmdb.py": "import lmdb\n",
                                          "jobs/dask_engine.py": "def run():\n    import distributed\n"})
    tests = tmp_path / "tests"
    (tests / "store").mkdir(parents=True)
    (tests / "store" / "test_a.py").write_text("import pytest\nfrom neardup.store.redis import RedisStore\n"
                                               "from neardup.store import lmdb\n")
    (tests / "store" / "test_b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                               "    import redis\n\ndef test():\n    import pyarrow\n")
    (tests / "observe.py").write_text("try:\n    import pyarrow.parquet\nexcept ImportError:\n    pass\n")
    (tests / "store" / "test_c.py").write_text("import pytest\nredis = pytest.importorskip('redis')\nimport redis\n")
    assert loaded_optional(tests, package) == ["tests/observe.py:2: pyarrow.parquet",
                                               "tests/store/test_a.py:2: neardup.store.redis.RedisStore"]
