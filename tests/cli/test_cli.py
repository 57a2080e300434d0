"""The command lines as a user meets them: what a command imports before it runs (NLTK alone takes a second or
more), its help, a stdout closed early, a server that cannot be reached, and every documented exit code produced
by a real case. `neardup index` and the bad-input table have their own modules (test_index_cli, test_bad_input)."""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neardup.cli import main as neardup_cli
from neardup.store import open_store
from neardup_client import cli as client_cli, cli_framework
from neardup_client.cli_framework import EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE
from observe import HEAVY, imported_by
from server_process import NEARDUP, Server, free_port, run_neardup
from textgen import article, text

ROOT = Path(__file__).resolve().parents[2]
STORIES = {"story-0": text(article(0)), "story-1": text(article(1)), "story-0-copy": "Breaking. " + text(article(0))}

def corpus() -> dict[str, str]:
    """The texts of the module's store (conftest.py's `store`, which the `server` serves)."""
    return STORIES


@pytest.mark.parametrize("argv, heavy", [
    (["--help"], HEAVY),
    (["info", "--help"], HEAVY),
    (["dedup", "--help"], HEAVY),
    (["info", "--target", "{target}"], HEAVY),
    (["dedup", "--target", "{target}", "story-0", "story-0-copy"], HEAVY),
    (["serve", "--help"], ("nltk", "scipy", "tqdm")),
    (["index", "--help"], ("nltk", "scipy")),
])
def test_help_dedup_and_info_do_not_import_nltk_or_the_server(server, tmp_path, argv, heavy):
    code, modules = imported_by(tmp_path, *(arg.format(target=server.target) for arg in argv))
    assert code == EXIT_OK
    assert not {name for name in modules if name.split(".")[0] in heavy or name in heavy}, argv


@pytest.mark.slow
def test_the_sketcher_imports_nltk_only_for_a_text_that_needs_it(tmp_path):
    """English word shingles are stemmed by the compiled stemmer: NLTK is not imported at all; sentences are split
    by NLTK's Punkt, imported at the first text, without the scipy that NLTK's package would import (installed
    here, as the cluster extra installs it), which the process can still import afterwards."""
    code = textwrap.dedent("""
        import sys
        from neardup.core.sketch_config import SketchConfig
        from neardup.core.sketcher import Sketcher
        words, sentences = Sketcher(), Sketcher(SketchConfig(unit="sentence"))
        assert words.sketch("Some words to sketch. And more of them.")
        assert "nltk" not in sys.modules
        assert sentences.sketch("Some words to sketch. And more of them.")
        assert "nltk" in sys.modules and "scipy" not in sys.modules
        import scipy.stats
        assert scipy.stats.fisher_exact([[3, 1], [1, 3]]).pvalue > 0
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# --- help ---------------------------------------------------------------------------------------------------------

def option_blocks(help_text: str) -> dict[str, str]:
    """An option's (or positional's) entry in argparse's help, keyed by its first name, whitespace normalized."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in help_text.splitlines():
        entry = re.match(r"  (\S+?),? ", line + " ")
        if entry and not line.startswith("   "):
            current = blocks.setdefault(entry.group(1), [])
        elif not line.startswith("   "):
            current = None
        if current is not None:
            current.append(line)
    return {name: " ".join(" ".join(lines).split()) for name, lines in blocks.items()}


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    subparsers = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return subparsers.choices[command]


COMMANDS = [("neardup", name) for name in neardup_cli.COMMANDS] + [("neardup-client", name)
                                                                     for name in client_cli.COMMANDS]


@pytest.mark.parametrize("program, command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_option_has_help_that_shows_its_default(neardup, monkeypatch, program, command):
    monkeypatch.delenv("NEARDUP_TARGET", raising=False)
    monkeypatch.delenv("NEARDUP_STORE", raising=False)
    if program == "neardup":
        entry, parser = neardup_cli.main, neardup_cli.build_parser([command])
    else:
        entry, parser = client_cli.main, client_cli.build_parser()
    done = neardup(command, "--help", entry=entry)
    assert done.returncode == EXIT_OK and done.stderr == ""
    blocks = option_blocks(done.stdout)
    actions = [action for action in command_parser(parser, command)._actions if action.dest != "help"]
    assert len(actions) >= 3  # the command's own parser (the list of commands gives a parser without options)
    for action in actions:
        name = action.option_strings[0] if action.option_strings else action.metavar
        block = blocks.get(name, "")
        assert action.help and " ".join(action.help.split()[:3]) in block, (name, block)
        if action.default is not None and not isinstance(action.default, bool):
            assert f"(default: {action.default})" in block, (name, block)


def test_the_list_of_commands_has_a_line_for_each(neardup):
    done = neardup("--help")
    assert done.returncode == EXIT_OK
    for name in ("index", "serve", "dedup", "info"):
        assert re.search(rf"^    {name} +\w", done.stdout, re.M), done.stdout


# --- a stdout closed early ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["info"], ["dedup", "story-0", "story-1", "story-0-copy"],
                                  ["dedup", "--jsonl", "-"]], ids=["info", "dedup", "dedup --jsonl"])
def test_a_closed_stdout_ends_quietly_with_exit_code_141(server, argv):
    """The reader is gone before neardup writes (the read end is closed first): no traceback, exit code 141."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([*NEARDUP, argv[0], "--target", server.target, *argv[1:]], stdout=write,
                              stderr=subprocess.PIPE, input=json.dumps({"id": "story-1"}).encode(), timeout=60)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr.decode()) == (EXIT_BROKEN_PIPE, "")


def test_neardup_info_piped_into_head_prints_its_first_line_and_no_traceback(server):
    """The user's own case: `neardup info | head -1`, whichever of the two finishes first."""
    command = f"{shlex.join([*NEARDUP, 'info', '--target', server.target])} | head -1"
    for _ in range(5):
        done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=60)
        assert done.stdout == "{\n" and done.stderr == ""
        assert done.returncode in (EXIT_OK, EXIT_BROKEN_PIPE)


# --- a server that cannot be reached ------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("program", [NEARDUP, [sys.executable, "-m", "neardup_client.cli"]],
                         ids=["neardup", "neardup-client"])
@pytest.mark.parametrize("argv", [["info"], ["dedup", "story-0"]], ids=["info", "dedup"])
def test_an_unreachable_server_is_named_with_the_likely_cause(program, argv):
    target = f"127.0.0.1:{free_port()}"  # nothing listens there; not waited for as a starting server for long
    done = subprocess.run([*program, argv[0], "--target", target, "--connect-timeout", "1", *argv[1:]],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (EXIT_FAILED, "")
    assert done.stderr.startswith("neardup: error: UNAVAILABLE: ") and done.stderr.count("\n") == 1
    assert done.stderr.endswith(f"; is `neardup serve` running on {target}?\n"), done.stderr


# --- every exit code, from a real case ----------------------------------------------------------------------------

def exits_ok(server, tmp_path):
    done = run_neardup("info", "--target", server.target)
    assert json.loads(done.stdout)["articles"] == len(STORIES) and done.stderr == ""
    return done.returncode


def exits_failed(server, tmp_path):
    done = run_neardup("dedup", "--target", server.target, "--metric", "hamming", "story-0")  # a bottom-K store
    assert done.stderr.startswith("neardup: error: FAILED_PRECONDITION: ") and done.stdout == ""
    return done.returncode


def exits_usage(server, tmp_path):
    done = run_neardup("dedup", "--target", server.target)
    assert done.stderr == "neardup: error: give either IDs or --jsonl FILE (see `neardup dedup --help`)\n"
    wrong = run_neardup("dedup", "--target", server.target, "--threshold", "high", "story-0")
    assert wrong.returncode == done.returncode and "invalid float value: 'high'" in wrong.stderr
    return done.returncode


def exits_partial(server, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    good = json.dumps({"id": "good", "text": STORIES["story-0"]})
    corpus.write_text(good + '\n{"id": "bad", "text": "a\tb"}\n')  # a raw tab inside a JSON string
    done = run_neardup("index", str(corpus), "--store", str(tmp_path / "store"))
    assert ("neardup: line 2: bad JSON at column 25: a string holds a raw tab or line break (write it as \\t or "
            "\\n); skipped\n") in done.stderr
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.count() == 1
    return done.returncode


def exits_interrupted(server, tmp_path):
    """Ctrl-C while `neardup index -` waits for its corpus on stdin: nothing is written."""
    process = subprocess.Popen([*NEARDUP, "index", "-", "--store", str(tmp_path / "store"), "--progress"],
                               stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    progress = ""
    while "lines/s" not in progress:  # reading the corpus has begun (--progress: its bar is drawn)
        progress += process.stderr.read(1)
        assert process.poll() is None, progress
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=30)
    assert "Traceback" not in process.stderr.read()
    process.stderr.close()
    process.stdin.close()
    assert not (tmp_path / "store").exists()
    return code


def exits_broken_pipe(server, tmp_path):
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([*NEARDUP, "info", "--target", server.target], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    finally:
        os.close(write)
    assert done.stderr == ""
    return done.returncode


CASES = {EXIT_OK: exits_ok, EXIT_FAILED: exits_failed, EXIT_USAGE: exits_usage, EXIT_PARTIAL: exits_partial,
         EXIT_INTERRUPTED: exits_interrupted, EXIT_BROKEN_PIPE: exits_broken_pipe}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_documented_exit_code_comes_from_a_real_case(server, tmp_path, code):
    assert CASES[code](server, tmp_path) == code


def test_the_exit_codes_are_one_table_and_the_docs_list_each():
    codes = {name: value for name, value in vars(cli_framework).items() if name.startswith("EXIT_")}
    assert set(codes.values()) == set(CASES) and len(codes) == len(CASES)
    assert (EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE) == (0, 1, 2, 130, 141)
    for doc in ("README.md", "docs/OPERATING.md"):
        listed = {int(value) for value in re.findall(r"^\| `?(\d+)`? \|", (ROOT / doc).read_text(), re.M)}
        assert set(CASES) <= listed, doc


@pytest.mark.slow  # a `neardup serve` process
def test_serve_stopped_by_ctrl_c_exits_0_as_the_exit_code_tables_say(store):
    """Ctrl-C is how an operator stops a server in a terminal: it drains and exits 0, not 130 (interrupted work)."""
    server = Server(store).wait_ready()
    try:
        os.killpg(server.process.pid, signal.SIGINT)  # a terminal sends Ctrl-C to the whole process group
        assert server.process.wait(timeout=60) == EXIT_OK
    finally:
        server.stop()
    for doc in ("README.md", "docs/OPERATING.md"):
        done_row = re.search(r"^\| 0 \| (.*)$", (ROOT / doc).read_text(), re.M).group(1)
        assert "`neardup serve`" in done_row and "Ctrl-C" in done_row, doc


@pytest.mark.parametrize("command", sorted(neardup_cli.COMMANDS))
def test_no_help_says_a_default_twice(neardup, monkeypatch, command):
    """An option whose help says its default in its own words is not given argparse's "(default: ...)" too."""
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps help to the terminal's width: one line per option
    done = neardup(command, "--help")
    assert done.returncode == EXIT_OK and done.stdout.startswith(f"usage: neardup {command}"), done
    defaults = re.findall(r"\(default: ([^)]*)\)\s*\(default: \1\)", done.stdout)
    assert not defaults, defaults


def _unused_port() -> str:
    return f"127.0.0.1:{free_port()}"


#: (program, argv, exit code): every command with a wrong option, a value out of range, and what fails, as the
#: exit-code table documents them (usage 2 before anything is read or sent, failure 1).
WALK = [
    *[(program, (command, "--no-such-option"), EXIT_USAGE) for program, command in COMMANDS],
    *[("neardup", (command, "--threshold", "1.5", *rest), EXIT_USAGE)
      for command, rest in (("dedup", ("a",)), ("similar", ("a",)), ("pairs", ()), ("cluster", ()),
                            ("configure", ()), ("index", ("corpus.jsonl",)))],
    *[("neardup", (command, "--timeout", "-1", *rest), EXIT_USAGE)
      for command, rest in (("dedup", ("a",)), ("similar", ("a",)), ("info", ()))],
    *[("neardup", (command, "--target", "127.0.0.1:99999", *rest), EXIT_USAGE)
      for command, rest in (("dedup", ("a",)), ("similar", ("a",)), ("info", ()))],
    ("neardup", ("serve", "--port", "99999"), EXIT_USAGE),
    ("neardup", ("similar", "--top-k", "0", "a"), EXIT_USAGE),
    ("neardup", ("index", "--workers", "0", "corpus.jsonl"), EXIT_USAGE),
    *[("neardup", (command, "--connect-timeout", "0", "--target", "{unused}", *rest), EXIT_FAILED)
      for command, rest in (("dedup", ("a",)), ("similar", ("a",)), ("info", ()))],
    *[("neardup", (command, "--store", "{missing}", *rest), EXIT_FAILED)
      for command, rest in (("pairs", ()), ("cluster", ()), ("clusters", ()), ("configure", ("--threshold", "0.5")),
                            ("train", ("pairs.jsonl",)), ("label", ("pairs.jsonl",)), ("serve", ("--port", "0")),
                            ("search-index", ()))],
    ("neardup", ("label", "--count", "0", "pairs.jsonl"), EXIT_USAGE),
    ("neardup", ("migrate", "{missing}", "{missing}2"), EXIT_FAILED),
    ("neardup", ("index", "{missing}.jsonl", "--store", "{missing}"), EXIT_FAILED),
    ("neardup-client", ("info", "--connect-timeout", "0", "--target", "{unused}"), EXIT_FAILED),
    ("neardup-client", ("dedup", "--threshold", "-0.5", "a"), EXIT_USAGE),
]


@pytest.mark.parametrize("program, argv, code", WALK, ids=[" ".join((p, *a)) for p, a, _ in WALK])
def test_every_command_exits_with_the_documented_code(neardup, tmp_path, monkeypatch, program, argv, code):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEARDUP_TARGET", raising=False)
    argv = [arg.format(unused=_unused_port(), missing=tmp_path / "missing") for arg in argv]
    done = neardup(*argv, entry=neardup_cli.main if program == "neardup" else client_cli.main)
    assert done.returncode == code, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("neardup: error: "), done.stderr


@pytest.mark.slow  # a `neardup serve` process
@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_while_the_server_starts_stops_it_with_exit_code_0(indexed_store, workers):
    store = indexed_store("starting", {f"a{i}": text(article(i)) for i in range(5)})
    process = subprocess.Popen([*NEARDUP, "serve", "--store", str(store), "--port", str(free_port()),
                                "--workers", workers], stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in process.stderr:  # SIGTERM as soon as it says it is starting: it is loading NLTK then
            lines.append(line)
            if "starting" in line:
                process.send_signal(signal.SIGTERM)
                break
        assert process.wait(timeout=60) == EXIT_OK, "".join(lines) + process.stderr.read()
    finally:
        process.kill()
