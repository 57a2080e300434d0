"""MkDocs hook: fills the pages' placeholders from the code and from benchmark result files at build time.

Placeholders (in any page's markdown, outside code blocks):

    {{ help "index" }}          `neardup index --help` as the installed code prints it, in a code block
    {{ help }}                  `neardup --help`
    {{ commands }}              a table of every `neardup` command: its one-line summary, linked to its page
    {{ layers }}                the layer table of server/neardup (docs/layers.py: which layer may import which)
    {{ include "FILE.md" }}     a markdown report a benchmark wrote, verbatim; shift=N demotes its headings by N,
                                start="TEXT" begins at its first line starting with TEXT, stop="TEXT" ends before
                                the first line after that starting with TEXT
    {{ result "FILE.json" "PATH" "FORMAT" }}
                                one value of a benchmark's JSON results: PATH is dotted keys and bracketed parts:
                                [KEY] a key that holds dots or spaces, [~PREFIX] the first key starting with PREFIX,
                                [N] a list's N-th element, [KEY=VALUE] the first list element whose KEY is VALUE;
                                FORMAT is a Python format string such as "{:,.0f}" (default: the value as it is)
    {{ ratio "FILE.json" "PATH_A" "PATH_B" "FORMAT" }}
                                the value at PATH_A divided by the value at PATH_B, formatted
    {{ table "FILE.json" "PATH" "HEADER=COLUMN_PATH{FORMAT}" ... }}
                                a markdown table with a row per element of the list (or dict) at PATH and a column
                                per argument, each cell the element's COLUMN_PATH (a dict's key is `_key`)

The help text comes from running `python -m neardup.cli COMMAND --help` with the interpreter that runs MkDocs,
so the pages always list the options the code has. Every command that `neardup --help` lists must have a page
docs/commands/neardup-COMMAND.md, or the build fails.

Result files are the JSON and markdown files the benchmark scripts write to benchmarks/out/; the docs read the
copies committed in docs/results/ (benchmarks/out/ is not committed). After re-running a benchmark:

    python docs/hooks.py refresh      # copies every result file a page names from benchmarks/out/ to docs/results/

NEARDUP_DOCS_RESULTS=DIR builds from another directory instead (e.g. benchmarks/out, to preview a fresh run).
A missing file, a PATH that is not in it, or a command whose help fails stops the build.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
COMMITTED_RESULTS = DOCS / "results"
BENCHMARK_OUT = ROOT / "benchmarks" / "out"
HELP_COLUMNS = "100"

PLACEHOLDER = re.compile(r"\{\{\s*(help|commands|layers|include|result|ratio|table)\b(.*?)\}\}")
FENCE = re.compile(r"^(\s*)(```+|~~~+)")

try:
    from mkdocs.exceptions import PluginError
except ImportError:  # `python docs/hooks.py refresh` without MkDocs installed
    PluginError = RuntimeError  # type: ignore[misc,assignment]

_help_cache: dict[tuple[str, ...], str] = {}


def results_dir() -> Path:
    """Where the result files are read from: docs/results/, or $NEARDUP_DOCS_RESULTS."""
    chosen = os.environ.get("NEARDUP_DOCS_RESULTS")
    return (ROOT / chosen).resolve() if chosen else COMMITTED_RESULTS


def neardup_help(*command: str, columns: str = HELP_COLUMNS) -> str:
    """`python -m neardup.cli COMMAND --help`, run from the repository root."""
    key = (*command, columns)
    if key not in _help_cache:
        env = dict(os.environ, COLUMNS=columns, LC_ALL="C.UTF-8")
        done = subprocess.run([sys.executable, "-m", "neardup.cli", *command, "--help"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise PluginError(f"`python -m neardup.cli {' '.join(command)} --help` failed "
                              f"(exit code {done.returncode}): {done.stderr.strip()}")
        _help_cache[key] = done.stdout.rstrip() + "\n"
    return _help_cache[key]


def commands() -> dict[str, str]:
    """Every command `neardup --help` lists, with its one-line summary, in the order it lists them."""
    text = neardup_help(columns="1000")
    listed: dict[str, str] = {}
    section = text.split("positional arguments:", 1)[-1].split("\noptions:", 1)[0]
    for line in section.splitlines():
        found = re.match(r"^ {4}(\S+)\s{2,}(.+)$", line) or re.match(r"^ {4}([a-z][\w-]*)$", line)
        if found:
            listed[found.group(1)] = found.group(2).strip() if found.lastindex == 2 else ""
        elif listed and line.strip() and not listed[list(listed)[-1]]:
            listed[list(listed)[-1]] = line.strip()  # a summary argparse put on the next line
    if not listed:
        raise PluginError("found no command in `python -m neardup.cli --help`")
    return listed


def layer_table() -> str:
    """docs/layers.py's table, in markdown."""
    spec = importlib.util.spec_from_file_location("neardup_docs_layers", DOCS / "layers.py")
    layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layers)
    return layers.markdown()


def _relative(page_path: str, target: str) -> str:
    """A link from the page at docs/page_path to docs/target."""
    return os.path.relpath(target, os.path.dirname(page_path) or ".").replace(os.sep, "/")


def _lookup(data, path: str, name: str):
    value = data
    for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", path):
        try:
            if part.startswith("["):
                inner = part[1:-1]
                if inner.startswith("~"):
                    value = value[next(key for key in value if key.startswith(inner[1:]))]
                elif isinstance(value, dict):
                    value = value[inner]
                elif "=" in inner:
                    key, wanted = inner.split("=", 1)
                    value = next(item for item in value if str(item.get(key)) == wanted)
                else:
                    value = value[int(inner)]
            else:
                value = value[part]
        except (KeyError, IndexError, TypeError, ValueError, StopIteration, AttributeError):
            raise PluginError(f"{name} has no {path!r} (stopped at {part!r})") from None
    return value


def _read_result(name: str) -> Path:
    path = results_dir() / name
    if not path.is_file():
        raise PluginError(f"result file {name} not found in {results_dir()}: run the benchmark that writes it, "
                          f"then `python docs/hooks.py refresh`")
    return path


def _include(name: str, shift: int = 0, start: str | None = None, stop: str | None = None) -> str:
    text = _read_result(name).read_text(encoding="utf-8").rstrip() + "\n"
    if start is not None or stop is not None:
        lines = text.splitlines()
        first = 0
        if start is not None:
            first = next((i for i, line in enumerate(lines) if line.startswith(start)), None)
            if first is None:
                raise PluginError(f"{name} has no line starting with {start!r}")
        last = len(lines)
        if stop is not None:
            last = next((i for i, line in enumerate(lines) if i > first and line.startswith(stop)), None)
            if last is None:
                raise PluginError(f"{name} has no line starting with {stop!r} after the start")
        text = "\n".join(lines[first:last]).rstrip() + "\n"
    if shift:
        lines, fenced = [], False
        for line in text.splitlines():
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced and re.match(r"^#{1,6} ", line):
                line = "#" * shift + line
            lines.append(line)
        text = "\n".join(lines) + "\n"
    return text


def _result(name: str, path: str, form: str = "{}") -> str:
    return _format(_lookup(_json(name), path, name), form, f"{name} {path!r}")


def _json(name: str):
    return json.loads(_read_result(name).read_text(encoding="utf-8"))


def _format(value, form: str, where: str) -> str:
    try:
        return form.format(value)
    except (ValueError, TypeError) as error:
        raise PluginError(f"{where}: cannot format {value!r} as {form!r}: {error}") from None


def _ratio(name: str, numerator: str, denominator: str, form: str = "{:.2f}") -> str:
    data = _json(name)
    return _format(_lookup(data, numerator, name) / _lookup(data, denominator, name), form,
                   f"{name} {numerator!r} / {denominator!r}")


def _table(name: str, path: str, *columns: str) -> str:
    items = _lookup(_json(name), path, name)
    if isinstance(items, dict):
        items = [dict(value, _key=key) if isinstance(value, dict) else {"_key": key, "value": value}
                 for key, value in items.items()]
    parsed = []
    for column in columns:
        header, _, rest = column.partition("=")
        column_path, brace, form = rest.partition("{")
        parsed.append((header, column_path, brace + form if brace else "{}"))
    rows = ["| " + " | ".join(header for header, _, _ in parsed) + " |",
            "|" + "|".join("---" if i == 0 else "---:" for i in range(len(parsed))) + "|"]
    for item in items:
        rows.append("| " + " | ".join(_format(_lookup(item, column_path, name), form, f"{name} {column_path!r}")
                                      for _, column_path, form in parsed) + " |")
    return "\n".join(rows) + "\n"


def _commands_table(page_path: str) -> str:
    rows = ["| command | what it does |", "|---|---|"]
    for name, summary in commands().items():
        rows.append(f"| [`neardup {name}`]({_relative(page_path, f'commands/neardup-{name}.md')}) | {summary} |")
    return "\n".join(rows) + "\n"


def _expand(match: re.Match, page_path: str) -> str:
    kind, raw = match.group(1), match.group(2)
    words = shlex.split(raw)
    option = re.compile(r"(shift=\d+|start=.+|stop=.+)")
    options = dict(word.split("=", 1) for word in words if kind == "include" and option.fullmatch(word))
    args = [word for word in words if not (kind == "include" and option.fullmatch(word))]
    if kind == "help":
        shown = " ".join(["neardup", *args, "--help"])
        return f"```text\n$ {shown}\n{neardup_help(*args)}```"
    if kind == "commands":
        return _commands_table(page_path)
    if kind == "layers":
        return layer_table()
    if kind == "include":
        if len(args) != 1:
            raise PluginError(f"{page_path}: include takes one file name: {match.group(0)}")
        return _include(args[0], int(options.get("shift", 0)), options.get("start"), options.get("stop"))
    if kind == "ratio":
        if len(args) not in (3, 4):
            raise PluginError(f"{page_path}: ratio takes a file, two paths and an optional format: {match.group(0)}")
        return _ratio(*args)
    if kind == "table":
        if len(args) < 3:
            raise PluginError(f"{page_path}: table takes a file, a path and columns: {match.group(0)}")
        return _table(*args)
    if len(args) not in (2, 3):
        raise PluginError(f"{page_path}: result takes a file, a path and an optional format: {match.group(0)}")
    return _result(*args)


def _lines(markdown: str):
    """(line, inside a code block?) for each line of the markdown."""
    fence = None
    for line in markdown.splitlines(keepends=True):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(2)[0] * 3
            yield line, True
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            yield line, True
        else:
            yield line, False


def expand(markdown: str, page_path: str) -> str:
    """The markdown with every placeholder outside code blocks replaced."""
    return "".join(line if fenced else PLACEHOLDER.sub(lambda m: _expand(m, page_path), line)
                   for line, fenced in _lines(markdown))


def referenced_results() -> set[str]:
    """Every result file a page names."""
    names = set()
    for page in DOCS.rglob("*.md"):
        if COMMITTED_RESULTS in page.parents:
            continue
        for line, fenced in _lines(page.read_text(encoding="utf-8")):
            for kind, raw in [] if fenced else PLACEHOLDER.findall(line):
                if kind in ("include", "result", "ratio", "table"):
                    names.add(shlex.split(raw)[0])
    return names


# --- MkDocs events -------------------------------------------------------------------------------------------


def on_pre_build(config, **kwargs) -> None:
    _help_cache.clear()


def on_files(files, config, **kwargs):
    """Every command `neardup --help` lists has its reference page."""
    missing = [name for name in commands() if files.get_file_from_path(f"commands/neardup-{name}.md") is None]
    if missing:
        raise PluginError(f"no reference page for {', '.join(missing)}: add docs/commands/neardup-NAME.md with "
                          '{{ help "NAME" }} in it')
    return files


def on_page_markdown(markdown, page, config, files, **kwargs):
    return expand(markdown, page.file.src_uri)


# --- python docs/hooks.py refresh ----------------------------------------------------------------------------


def refresh(source: Path = BENCHMARK_OUT) -> int:
    """Copies the result files the pages name from source (benchmarks/out/) into docs/results/."""
    COMMITTED_RESULTS.mkdir(exist_ok=True)
    missing = []
    for name in sorted(referenced_results()):
        if (source / name).is_file():
            shutil.copy2(source / name, COMMITTED_RESULTS / name)
            print(f"copied {name}")
        else:
            missing.append(name)
    for name in missing:
        print(f"kept the committed {name}: not in {source}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["refresh"]:
        sys.exit("usage: python docs/hooks.py refresh [SOURCE_DIR]")
    sys.exit(refresh(Path(sys.argv[2]) if len(sys.argv) > 2 else BENCHMARK_OUT))
