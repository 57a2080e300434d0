"""The layer table of server/neardup: which layer may import which. The one declaration of it: the Architecture page
shows it (`{{ layers }}`, docs/hooks.py) and tests/docs/test_layers.py checks every import of the code against it
(`check`). `python docs/layers.py [PACKAGE_DIR]` prints what the table does not allow, one line each."""
from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import NamedTuple

#: The package root (`neardup/__init__.py`) holds only the version: every layer may import it.
ROOT = "neardup"
#: The client package: its library (`client`: NearDupClient, messages, enums, generated stubs, json_lines) and its
#: command line (`client command line`: `neardup_client.cli`, `neardup_client.cli_framework`).
CLIENT = "neardup_client"
CLIENT_COMMAND_LINE_MODULES = ("cli", "cli_framework")


class Layer(NamedTuple):
    name: str
    holds: str
    may_import: tuple[str, ...]  # other layers, "client", "client command line"; its own layer always


#: Innermost first. A layer imports its own modules and those `may_import` names, nothing else of neardup or of
#: neardup_client.
LAYERS = (
    Layer("core", "the vocabulary (every metric, grouping, kind and default, by name), errors, the reference "
          "algorithms of texts and of items (the specifications the compiled code is tested against), the pair "
          "kernel, sketching, fields and items, the stop-list rule, threshold calibration, corpus-search candidates "
          "and bounds, cluster linkage", ()),
    Layer("store", "one storage interface (`SketchStore`) and its LMDB, Redis and Redis Cluster backends; postings "
          "buckets",
          ("core",)),
    Layer("runtime", "the domain operations on a served store (`served_store.py`): Dedup (`deduplicator.py`), "
          "FindSimilar and pairs (`similar_search.py`), Explain (`explainer.py`), Upsert, Delete and clusters "
          "(`writer.py`); the live view that keeps every read fresh, the session cache, the change feed, and the "
          "search indexes (`search/`: the search index file, the delta that follows the store, each worker's own "
          "copy in memory, the file every worker maps)",
          ("store", "core")),
    Layer("service", "the gRPC servicer, the server bootstrap (workers, TLS, signals), protobuf converters, the "
          "bearer-token interceptor, metrics", ("runtime", "store", "core", "client")),
    Layer("jobs", "offline work: the index pipeline and its engines (local, Dask), record parsing, Parquet, pairs, "
          "clustering, training and its labelling session, migration, threshold setting, progress bars",
          ("runtime", "store", "core", "client")),
    Layer("ui", "`neardup ui`: the page's lifecycle (`serving.py`: what it opens, its serving thread, signals), an "
          "HTTP server with a JSON API that calls a running server through the client, the page's static files, "
          "(with `--store`) the store's clusters read-only, (with `--corpus`) the corpus's titles, texts and "
          "records read by id, and (with `--labels`) the labelling session of `neardup label` "
          "(jobs/label.py)", ("jobs", "runtime", "store", "core", "client")),
    Layer("cli", "`neardup COMMAND`: dispatch and one argument module per command, which parses and prints",
          ("ui", "service", "jobs", "runtime", "store", "core", "client", "client command line")),
)
NAMES = {layer.name for layer in LAYERS}


class Violation(NamedTuple):
    path: str  # relative to the package's parent directory, as server/neardup's are shown: neardup/ui/labels.py
    line: int
    module: str  # the importing module
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.module} imports {self.imported}: {self.rule}"


def _described(names) -> str:
    shown = [f"{name}/" if name in NAMES else f"the {name}" for name in names]
    return ", ".join(shown) if shown else "nothing"


def rule(layer: Layer) -> str:
    """The layer's row of the table, as a sentence."""
    if not layer.may_import:
        return f"{layer.name}/ may import nothing of neardup but {layer.name}/ (docs/layers.py)"
    return f"{layer.name}/ may import only {_described(layer.may_import)} and {layer.name}/ (docs/layers.py)"


def _module_name(path: Path, package_dir: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement reaches: for `from X import a, b`, X.a and X.b (either may be a module
    or a name; only the leading parts decide the layer)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [f"{prefix}.{alias.name}" if alias.name != "*" else prefix for alias in node.names]


def _layer_of(dotted: str, package_dir: Path) -> str | None:
    """The layer (or client part, or ROOT) a dotted name belongs to; None when it is neither neardup's nor the
    client's (the standard library, a third-party package)."""
    parts = dotted.split(".")
    if parts[0] == package_dir.name:
        if len(parts) == 1 or parts[1] in NAMES:
            return ROOT if len(parts) == 1 else parts[1]
        if (package_dir / parts[1]).is_dir() or (package_dir / f"{parts[1]}.py").is_file():
            return ".".join(parts[:2])  # a module of no layer: allowed to none
        return ROOT  # a name the root's __init__.py defines (`from neardup import __version__`)
    if parts[0] == CLIENT:
        return "client command line" if len(parts) > 1 and parts[1] in CLIENT_COMMAND_LINE_MODULES else "client"
    return None


def check(package_dir: str | Path) -> list[Violation]:
    """Every import in the package at package_dir (server/neardup, or a tree laid out like it) that the table does
    not allow: at any depth (in functions, under `if`), absolute or relative."""
    package_dir = Path(package_dir)
    layers = {layer.name: layer for layer in LAYERS}
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        shown = str(path.relative_to(package_dir.parent))
        module = _module_name(path, package_dir)
        if len(relative.parts) == 1:
            if path.name != "__init__.py":
                found.append(Violation(shown, 1, module, module, "a module directly in the package belongs to no "
                                       f"layer: put it in one of {', '.join(sorted(NAMES))}"))
            continue
        layer = layers.get(relative.parts[0])
        if layer is None:
            found.append(Violation(shown, 1, module, module, f"{relative.parts[0]}/ is no layer of the table "
                                   "(docs/layers.py)"))
            continue
        allowed = {layer.name, ROOT, *layer.may_import}
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for dotted in _targets(node, module, path.name == "__init__.py"):
                target = _layer_of(dotted, package_dir)
                if target is not None and target not in allowed:
                    found.append(Violation(shown, node.lineno, module, dotted, rule(layer)))
    return sorted(found, key=lambda v: (v.path, v.line, v.imported))


def markdown() -> str:
    """The table as the Architecture page shows it."""
    rows = ["| layer | holds | may import |", "|---|---|---|"]
    for layer in LAYERS:
        allowed = ", ".join(f"`{name}/`" if name in NAMES else _client_part(name)
                            for name in layer.may_import) or "nothing of neardup but `core/`"
        rows.append(f"| `{layer.name}/` | {layer.holds} | {allowed} |")
    return "\n".join(rows) + "\n"


def _client_part(name: str) -> str:
    if name == "client command line":
        modules = " and ".join(f"`{CLIENT}.{module}`" for module in CLIENT_COMMAND_LINE_MODULES)
        return f"the client's command line ({modules})"
    return f"the client (`{CLIENT}`, but its command line)"


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "server" / "neardup"
    problems = check(where)
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)
