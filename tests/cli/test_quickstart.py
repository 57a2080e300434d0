"""The README's first command (without the install) and its Quickstart block, pasted whole into a fresh shell, as a
newcomer runs them: every line exits 0, the clients wait for the server that is still starting, and `kill %1`
stops the server with exit code 0."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from server_process import free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # a shell running the README's commands, a server among them


def sh_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", markdown, re.S | re.M)


def test_the_quickstart_block_pasted_whole_exits_0(tmp_path):
    readme = (ROOT / "README.md").read_text()
    first = sh_blocks(readme)[0]
    quickstart = sh_blocks(readme[readme.index("## Quickstart"):])[0]
    # the first command without making the venv and installing (this interpreter's venv is the one installed)
    steps = [step.strip() for step in " ".join(first.split("\n")).split("&&")]
    steps = [step for step in steps if "venv " not in step and "pip install" not in step]
    assert any("neardup index" in step for step in steps), first
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")
    port = free_port()
    served = re.sub(r"(neardup serve)\b", rf"\1 --port {port}", quickstart)
    assert served != quickstart, quickstart
    # on a failing line the server left in the background is stopped, so that its output pipe closes;
    # the last wait answers with the server's own exit code
    script = ("set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + " && ".join(steps) + "\n" + served
              + "\nwait\n")
    environment = {**os.environ, "NEARDUP_TARGET": f"127.0.0.1:{port}"}
    environment.pop("NEARDUP_STORE", None)
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=environment, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"keep"' in done.stdout and '"duplicates"' in done.stdout, done.stdout[-2000:]


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, re.S | re.M)


def test_the_python_examples_run_against_the_sample_and_leave_it_as_it_was(tmp_path):
    """The README's and getting-started's Python examples, run as written against a server of the shipped sample,
    raise nothing and change none of the sample's articles (an example writes ids of its own)."""
    from neardup.store import open_store
    from server_process import serving

    sample = tmp_path / "sample.jsonl"
    subprocess.run([sys.executable, "-m", "benchmarks.sample", "--out", str(sample)], cwd=ROOT, check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "neardup.cli", "index", str(sample), "--store", str(tmp_path / "store")],
                   check=True, capture_output=True)
    with open_store(tmp_path / "store", readonly=True) as store:
        before = dict(store.items())
    examples = [block for page in ("README.md", "docs/getting-started.md")
                for block in python_blocks((ROOT / page).read_text()) if "NearDupClient(" in block]
    assert len(examples) == 2, examples
    with serving(tmp_path / "store") as server:
        for example in examples:
            # the server of this test, and a timeout a loaded test machine keeps (the examples show a tight one)
            code = example.replace('"127.0.0.1:50051"', repr(server.target)).replace("timeout=0.05", "timeout=10")
            assert code != example
            exec(compile(code, "example", "exec"), {})
    with open_store(tmp_path / "store", readonly=True) as store:
        after = dict(store.items())
    assert {doc_id: sketch for doc_id, sketch in after.items() if doc_id in before} == before
    assert set(after) - set(before) <= {"my-note"}
