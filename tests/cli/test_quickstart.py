"""The README's first command (without the install) and its Quickstart block, pasted whole into a fresh shell, as a
newcomer runs them: every line exits 0, the clients wait for the server that is still starting, and `kill %1`
stops the server with exit code 0."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.lib.server_process import free_port

ROOT = Path(__file__).resolve().parents[2]


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
