"""One rule for the progress of every long command (jobs/progress.py, the flag in cli/options.py): bars redrawn in
place where stderr is a terminal, one summary line elsewhere, `--progress` / `--no-progress` to force either.

Where stderr is no terminal the commands run through main() in this process (capsys: no terminal); on a terminal
they run as real processes whose stderr is a pseudo-terminal (the pty module), as a user's shell gives them."""
from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from server_process import NEARDUP
from neardup_client.cli_framework import EXIT_OK, EXIT_PARTIAL
from textgen import corpus_records, stories

#: A bar's frame as tqdm draws it: a count over its total and the bar ("100%|#####| 5/5").
BAR = re.compile(r"\d+%\|.*\| \d+/\d+")
SECONDS = r" in \d+\.\d s"


def corpus() -> dict[str, str]:
    return stories()


def write_corpus(path: Path) -> Path:
    """Five records, a malformed line, and a record whose id came before (the later one is written)."""
    records = corpus_records(5)
    lines = [json.dumps(record) for record in records]
    lines[3:3] = ['{"id": "bad", "text": ', json.dumps({**records[0], "text": records[0]["text"] + " Updated."})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


INDEX_LINE = (r"neardup index: sketching 7 lines \(6 sketched, 1 skipped: malformed, 1 record replaced by a later "
              r"line of the same id\); writing 5 of 5 docs; postings (\d+) of \1 parts" + SECONDS)


def test_index_writes_no_bar_but_one_line_of_what_was_written_and_skipped(neardup, tmp_path):
    done = neardup("index", write_corpus(tmp_path / "corpus.jsonl"), "--store", tmp_path / "store")
    assert done.returncode == EXIT_PARTIAL, done.stderr
    assert "\r" not in done.stderr and not BAR.search(done.stderr)
    warning, summary = done.stderr.splitlines()
    assert warning.startswith("neardup: line 4: bad JSON") and warning.endswith("; skipped")
    assert re.fullmatch(INDEX_LINE, summary), summary
    assert "documents:            5" in done.stdout and "skipped lines:        1" in done.stdout

    again = neardup("index", write_corpus(tmp_path / "corpus.jsonl"), "--store", tmp_path / "store")
    assert re.fullmatch(r"neardup index: sketching 7 lines \(6 sketched, 1 skipped: malformed, 1 record replaced by "
                        r"a later line of the same id\); writing 5 of 5 docs" + SECONDS,
                        again.stderr.splitlines()[-1]), again.stderr  # an existing store: no postings step


def test_the_store_commands_write_no_bar_but_one_summary_line(neardup, store, tmp_path):
    articles = len(corpus())
    pairs = neardup("pairs", "--store", store)
    cluster = neardup("cluster", "--store", store)
    clusters = neardup("clusters", "--store", store, "--export", tmp_path / "clusters.jsonl")
    migrated = neardup("migrate", store, tmp_path / "copy")
    search_index = neardup("search-index", "--store", store, "--file", tmp_path / "search-index")
    for done in (pairs, cluster, clusters, migrated, search_index):
        assert done.returncode == EXIT_OK, done.stderr
        assert "\r" not in done.stderr and not BAR.search(done.stderr), done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
    assert pairs.stderr.startswith(f"pairs: {articles} articles, ")      # pairs and cluster: their own summary line
    assert cluster.stderr.startswith(f"cluster: {articles} articles, ")
    assert re.fullmatch(f"neardup clusters: exporting {articles} of {articles} articles{SECONDS}\n", clusters.stderr)
    assert re.fullmatch(f"neardup migrate: migrating {articles} of {articles} docs{SECONDS}\n", migrated.stderr)
    assert re.fullmatch(f"neardup search-index: reading articles {articles} articles; building the postings "
                        f"{articles} articles{SECONDS}\n", search_index.stderr)
    assert search_index.stdout.startswith(f"search index {tmp_path / 'search-index'}: {articles} articles")


def test_progress_draws_bars_where_stderr_is_no_terminal(neardup, store, tmp_path):
    articles = len(corpus())
    runs = {"index": neardup("index", write_corpus(tmp_path / "corpus.jsonl"), "--store", tmp_path / "new",
                             "--progress"),
            "pairs": neardup("pairs", "--store", store, "--progress"),
            "cluster": neardup("cluster", "--store", store, "--progress"),
            "clusters": neardup("clusters", "--store", store, "--export", tmp_path / "c.jsonl", "--progress"),
            "migrate": neardup("migrate", store, tmp_path / "copy", "--progress"),
            "search-index": neardup("search-index", "--store", store, "--file", tmp_path / "si", "--progress")}
    for name, done in runs.items():
        assert done.returncode in (EXIT_OK, EXIT_PARTIAL), done.stderr
        # a search index's steps have no total: their bars count, without a share done
        assert "\r" in done.stderr and (BAR.search(done.stderr) or name == "search-index"), (name, done.stderr)
        assert f"neardup {name}:" not in done.stderr  # the bars instead of the summary line
    assert f"\rreading articles: {articles} articles" in runs["search-index"].stderr
    assert "sketching: 7 lines" in runs["index"].stderr and "5/5" in runs["index"].stderr
    assert "6 sketched, 1 skipped: malformed" in runs["index"].stderr
    for name in ("pairs", "cluster", "clusters", "migrate"):
        assert f"{articles}/{articles}" in runs[name].stderr


def on_a_terminal(*args: str | Path) -> tuple[int, str, str]:
    """A real `neardup ARGS` process whose stderr is a pseudo-terminal of 100 columns (stdout a pipe): its exit
    code, stdout, and what the terminal was sent (no newline translation: "\\r" only where the command wrote it)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    process = subprocess.Popen([*NEARDUP, *map(str, args)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every end of the terminal is closed, the process has exited
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    out = process.stdout.read().decode()
    process.stdout.close()
    return process.wait(timeout=120), out, shown.decode()


@pytest.mark.slow
def test_on_a_terminal_bars_are_drawn_and_no_progress_forces_the_summary_line(tmp_path):
    corpus_path = write_corpus(tmp_path / "corpus.jsonl")
    code, out, shown = on_a_terminal("index", corpus_path, "--store", tmp_path / "store")
    assert code == EXIT_PARTIAL, shown
    assert "\rsketching: 7 lines" in shown and "\rwriting: 100%|" in shown and BAR.search(shown), shown
    assert "6 sketched, 1 skipped: malformed" in shown and "neardup index:" not in shown
    assert "documents:            5" in out

    code, out, shown = on_a_terminal("index", corpus_path, "--store", tmp_path / "other", "--no-progress")
    assert code == EXIT_PARTIAL, shown
    assert "\r" not in shown and not BAR.search(shown), shown
    assert re.fullmatch(INDEX_LINE, shown.splitlines()[-1]), shown

    code, out, shown = on_a_terminal("pairs", "--store", tmp_path / "store")
    assert code == EXIT_OK, shown
    assert "\rpairs: 100%|" in shown and "5/5" in shown and shown.splitlines()[-1].startswith("pairs: 5 articles")
    code, out, shown = on_a_terminal("migrate", tmp_path / "store", tmp_path / "copy", "--no-progress")
    assert code == EXIT_OK, shown
    assert re.fullmatch(f"neardup migrate: migrating 5 of 5 docs{SECONDS}\n", shown), shown
