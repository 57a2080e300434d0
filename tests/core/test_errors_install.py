"""What an error for a missing optional dependency tells the user to run: a line that works for the installation
they have (a checkout is on no package index)."""
from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from neardup.core.errors import install_line

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_is_installed_from_its_directory_anything_else_by_name():
    assert install_line("cluster", "file:///home/me/neardup") == "pip install '/home/me/neardup[cluster]'"
    assert install_line("redis", "file:///srv/my%20copy") == "pip install '/srv/my copy[redis]'"
    assert install_line("dask", "https://example.org/neardup-0.1.0.tar.gz") == "pip install 'neardup[dask]'"


def test_the_running_installation_names_where_it_came_from():
    """This environment's neardup was installed from a directory (.ci/run installs the checkout): the line names it."""
    origin = json.loads(importlib.metadata.distribution("neardup").read_text("direct_url.json") or "{}").get("url", "")
    if not origin.startswith("file://"):
        pytest.fail(f"neardup was not installed from a checkout here ({origin!r}); install it with pip install .")
    done = subprocess.run([sys.executable, "-c", "from neardup.core.errors import install_line; "
                           "print(install_line('cluster'))"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"pip install '{origin[len('file://'):]}[cluster]'"
