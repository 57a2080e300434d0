"""Every command of the README's table, run as a newcomer runs it after the README's first command: on the shipped
sample, as its own `neardup` process, each exits 0 and does what its summary says. A command added to the table
and not run here fails the first test."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from server_process import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
NEARDUP = [sys.executable, "-m", "neardup.cli"]
#: The commands this module runs, in the order a newcomer meets them.
RUN_HERE = ("index", "serve", "info", "dedup", "similar", "explain", "pairs", "cluster", "clusters",
            "search-index", "configure", "label", "train", "migrate", "ui")

pytestmark = pytest.mark.redis


def table_commands() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Commands"):]
    return set(re.findall(r"^\| \[`neardup ([a-z-]+)`\]", table, re.M))


def test_this_module_runs_every_command_of_the_readme_table():
    assert table_commands() == set(RUN_HERE)


def neardup(*args: str, stdin: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """One command, as its own process; it must exit 0."""
    done = subprocess.run([*NEARDUP, *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (args, done.stderr[-3000:])
    return done


def label_by_similarity(store: Path, answers: Path, count: int) -> list[dict]:
    """`neardup label` driven through its prompts as a person would answer them: duplicate when the pair's shown
    containment is at least one half (consistent answers, which train can fit)."""
    process = subprocess.Popen([*NEARDUP, "label", "--store", str(store), "--count", str(count), str(answers)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               bufsize=0)
    shown = ""
    while process.poll() is None:
        char = process.stdout.read(1)
        if not char:
            break
        shown += char
        if shown.endswith("[q]uit: "):
            similarity = float(re.findall(r"containment ([0-9.]+)", shown)[-1])
            process.stdin.write("y\n" if similarity >= 0.5 else "n\n")
    process.stdin.close()
    assert process.wait(60) == 0, process.stderr.read()[-3000:]
    return [json.loads(line) for line in answers.read_text().splitlines()]


def test_every_command_of_the_table_exits_0_on_the_shipped_sample(tmp_path, redis_url):
    sample, store = tmp_path / "sample.jsonl", tmp_path / "neardup-store"
    subprocess.run([sys.executable, "-m", "benchmarks.sample", "--out", str(sample)], cwd=ROOT, check=True,
                   capture_output=True)
    ids = [json.loads(line)["id"] for line in sample.read_text().splitlines()]
    texts = {record["id"]: record["text"] for record in map(json.loads, sample.read_text().splitlines())}

    neardup("index", str(sample), "--store", str(store))

    pairs = [json.loads(line) for line in neardup("pairs", "--store", str(store)).stdout.splitlines()]
    assert pairs and all({"a", "b", "similarity"} <= set(pair) for pair in pairs)
    neardup("cluster", "--store", str(store))
    clusters = [json.loads(line) for line in neardup("clusters", "--store", str(store)).stdout.splitlines()]
    assert sorted(row["id"] for row in clusters) == sorted(ids)
    # the pair with the highest similarity lands in one cluster
    cluster_of = {row["id"]: row["cluster"] for row in clusters}
    closest = max(pairs, key=lambda pair: pair["similarity"])
    assert cluster_of[closest["a"]] == cluster_of[closest["b"]] != -1
    neardup("search-index", "--store", str(store))
    neardup("search-index", "--store", str(store), "--check")

    neardup("configure", "--store", str(store), "--threshold", "0.6")
    answers = label_by_similarity(store, tmp_path / "answers.jsonl", 30)
    assert len(answers) == 30 and {answer["duplicate"] for answer in answers} == {True, False}
    neardup("train", "--store", str(store), str(tmp_path / "answers.jsonl"))

    copy = tmp_path / "copy"
    neardup("migrate", str(store), str(copy))
    neardup("migrate", str(store), redis_url)

    with serving(store) as server:
        target = ("--target", server.target)
        info = json.loads(neardup("info", *target).stdout)
        assert info["articles"] == len(ids)
        # what train stored replaced what configure set
        assert info["default_threshold_source"] == "trained" and info["default_threshold"] != 0.6
        answer = json.loads(neardup("dedup", *target, *ids[:100]).stdout)
        assert answer["keep"][0] == ids[0] and len(answer["keep"]) + len(answer["duplicates"]) == 100
        similar = json.loads(neardup("similar", *target, closest["a"]).stdout)
        assert closest["b"] in [match["id"] for match in similar["matches"]]
        explained = json.loads(neardup("explain", *target, closest["a"], closest["b"]).stdout)
        assert explained["similarity"] == pytest.approx(closest["similarity"])
        text = tmp_path / "text.txt"
        text.write_text(texts[closest["a"]])
        similar = json.loads(neardup("similar", *target, "--text", str(text)).stdout)
        assert closest["a"] in [match["id"] for match in similar["matches"]]

        port = free_port()
        ui = subprocess.Popen([*NEARDUP, "ui", *target, "--port", str(port), "--store", str(store)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            page = ""
            for _ in range(200):
                try:
                    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
                    break
                except OSError:
                    time.sleep(0.1)
            assert "<html" in page.lower()
        finally:
            ui.send_signal(signal.SIGTERM)
            assert ui.wait(30) == 0, ui.stderr.read()[-3000:]
