"""The documentation: the site builds with `mkdocs build --strict` (a broken link or anchor fails it), every command
has its reference page with the help the code prints, and the README stays a short front door whose links resolve."""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200


def build(site: Path, root: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("NEARDUP_DOCS_RESULTS", None)
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=root,
                          env=env, capture_output=True, text=True, timeout=600)


def neardup_commands() -> dict[str, str]:
    """The commands `neardup --help` lists, each with its summary."""
    done = subprocess.run([sys.executable, "-m", "neardup.cli", "--help"], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="1000"), check=True)
    section = done.stdout.split("positional arguments:", 1)[1].split("\noptions:", 1)[0]
    commands = dict(re.findall(r"^ {4}([a-z][\w-]*) +(\S.*)$", section, re.M))
    assert len(commands) >= 10, done.stdout
    return commands


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    done = build(site)
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def test_the_site_builds_strict(site):
    assert (site / "index.html").is_file()


def test_every_command_has_its_reference_page_with_the_help_the_code_prints(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    for command in neardup_commands():
        page = site / "commands" / f"neardup-{command}" / "index.html"
        assert page.is_file(), f"no reference page for neardup {command}"
        text = html.unescape(page.read_text(encoding="utf-8"))
        assert f"usage: neardup {command} [-h]" in text, f"neardup {command}'s page lacks its --help"
        assert f'href="commands/neardup-{command}/"' in home, f"the home page does not link to neardup {command}"


def test_no_placeholder_is_left_in_a_page(site):
    for page in site.rglob("*.html"):
        if page.parent.name == "development":  # shows the placeholders themselves, in a code block
            continue
        text = page.read_text(encoding="utf-8")
        article = text[text.find("<article"):text.find("</article>")]
        assert not re.search(r"\{\{\s*\w", article), f"{page.relative_to(site)} holds a placeholder"


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_links_resolve_to_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    internal = [link for link in links if not re.match(r"^[a-z][a-z0-9+.-]*:", link)]
    assert internal
    for link in internal:
        path = link.split("#", 1)[0]
        assert path and (ROOT / path).exists(), f"README.md links to {link}, which is no file"


def test_the_readme_lists_every_command_with_its_reference_page_and_summary():
    """Each command's row: its reference page and the summary `neardup --help` gives (cli/main.py owns it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for command, summary in neardup_commands().items():
        assert f"| [`neardup {command}`](docs/commands/neardup-{command}.md) | {summary} |" in text, command


def test_a_broken_link_fails_the_build(tmp_path):
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", copy)
    shutil.copytree(ROOT / "docs", copy / "docs")
    page = copy / "docs" / "getting-started.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[a page that is not there](no-such-page.md)\n"
                    "[an anchor that is not there](threshold.md#no-such-anchor)\n", encoding="utf-8")
    done = build(tmp_path / "site", copy)  # strict mode reports every warning, then fails
    assert done.returncode != 0
    assert "no-such-page.md" in done.stdout + done.stderr
    assert "no-such-anchor" in done.stdout + done.stderr


def test_the_commands_page_names_every_command_neardup_client_has():
    from neardup_client import cli as client_cli

    text = (ROOT / "docs" / "commands" / "index.md").read_text(encoding="utf-8")
    sentence = re.search(r"`neardup-client`, installed with the client package alone .*? commands\.", text, re.S)
    assert sentence is not None
    named = re.findall(r"`([a-z]+)`", sentence.group(0).split(" has", 1)[1])
    assert named == list(client_cli.COMMANDS)


def test_a_newcomer_finds_the_web_page_from_the_home_page_and_getting_started():
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    where_to_go = home.split("## Where to go", 1)[1].split("\n## ", 1)[0]
    next_steps = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8").split("## Next", 1)[1]
    assert "(ui.md)" in where_to_go and "(ui.md)" in next_steps
