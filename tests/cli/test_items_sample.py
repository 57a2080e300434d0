"""The items sample of README's first command, through the fields page's commands as a newcomer runs them
(docs/fields.md's shell block, each line a real process): the sample and its schema are written beside the text
sample, indexed into an items store, `neardup label` proposes pairs field by field and records the answers (given
here by the truth: two ads of one vacancy are duplicates), and `neardup train` stores a model, as the page says."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import sample as sample_command
from benchmarks.lib import sample
from neardup.store import open_store

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "duplicate? [y]es [n]o [u]nsure [b]ack (undo) [q]uit: "


def fields_page_commands() -> list[str]:
    """The first shell block of docs/fields.md, a command a line (comments dropped)."""
    block = re.search(r"^```sh\n(.*?)^```", (ROOT / "docs" / "fields.md").read_text(encoding="utf-8"), re.S | re.M)
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def argv(command: str) -> list[str]:
    """A documented command as a process of this installation: `python` this interpreter, `neardup` its module."""
    words = shlex.split(command)
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    assert words[0] == "neardup", command
    return [sys.executable, "-m", "neardup.cli", *words[1:]]


def answer_by_the_truth(command: list[str], cwd: Path, openings: dict[str, str]) -> tuple[int, str, list[tuple]]:
    """Runs `neardup label` and answers each pair it shows (ids from its table's head row) y when both ads are of
    one vacancy, else n; returns its exit code, stderr and the pairs answered."""
    process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    shown, asked = b"", []
    while chunk := os.read(process.stdout.fileno(), 65536):
        shown += chunk
        text = shown.decode("utf-8", "replace")
        if text.endswith(PROMPT):
            lines = text.splitlines()
            head = max(number for number, line in enumerate(lines) if line.startswith("pair "))
            field, a, b, similarity = lines[head + 1].split()
            assert (field, similarity) == ("field", "similarity"), lines[head + 1]
            assert any(line.split()[0] == "title" for line in lines[head + 2:]), text  # field by field
            duplicate = openings[a] == openings[b]
            asked.append((a, b, duplicate))
            process.stdin.write(b"y\n" if duplicate else b"n\n")
            process.stdin.flush()
            shown = b""
    process.stdin.close()
    error = process.stderr.read().decode()
    return process.wait(timeout=120), error, asked


@pytest.mark.slow
def test_the_fields_page_commands_index_label_and_train_the_items_sample(tmp_path):
    make, index, label, train = fields_page_commands()
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")
    assert make == "python -m benchmarks.sample --out sample.jsonl"  # README's first command's own
    done = subprocess.run(argv(make), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    records, openings = sample.build_items()
    written = [json.loads(line) for line in (tmp_path / "sample-items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert written == records and len(records) == 600
    assert json.loads((tmp_path / "sample-items-schema.json").read_text()) == sample.items_schema()

    done = subprocess.run(argv(index), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "documents:            600" in done.stdout and "default threshold:" in done.stdout
    with open_store(tmp_path / "ads", readonly=True) as store:
        assert store.config.kind == "items" and store.count() == 600 and store.model() is None

    code, error, asked = answer_by_the_truth(argv(label), tmp_path, openings)
    assert code == 0, error
    assert error.rstrip().endswith("120 answers saved in answers.jsonl; next: neardup train answers.jsonl --store ads")
    answers = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert [(answer["a"], answer["b"], answer["duplicate"]) for answer in answers] == asked
    assert len(asked) == 120 and 20 <= sum(duplicate for _, _, duplicate in asked) <= 100

    done = subprocess.run(argv(train), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    chosen = re.search(r"^chosen: ([\w-]+); stored in ads", done.stdout, re.M)
    assert chosen and done.stdout.startswith("rules alone "), done.stdout
    with open_store(tmp_path / "ads", readonly=True) as store:
        assert json.loads(store.model())["kind"] == chosen.group(1)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_the_shipped_items_sample_is_made_again_byte_for_byte(tmp_path):
    records, _ = sample.build_items()
    sample.write(records, tmp_path / "again.jsonl.gz")
    assert (tmp_path / "again.jsonl.gz").read_bytes() == sample_command.SHIPPED_ITEMS.read_bytes()
    assert json.loads(sample_command.ITEMS_SCHEMA.read_text()) == sample.items_schema()
