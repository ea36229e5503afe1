"""Every relative link of the README (and of docs/) leads to a file the repository holds.

A link into a generated, git-ignored folder (data/figures/) resolves on the machine that ran a
batch and nowhere else: on the code host, or in a fresh clone, it is broken. So a link must name
a file that exists and that git does not ignore.
"""

import re
import subprocess
from pathlib import Path

import pytest

from labserver.paths import ROOT

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")


def links(text: str) -> list[str]:
    """The relative link targets of Markdown text (not in code; no URLs, mail or in-page anchors)."""
    text = CODE.sub("", FENCE.sub("", text))
    targets = [m.group(1) for m in LINK.finditer(text)]
    return [t for t in targets if not re.match(r"^([a-z][a-z0-9+.-]*:|#|//)", t, re.IGNORECASE)]


def ignored(paths: list[Path]) -> set[Path]:
    """Those of `paths` that git ignores (none if this is no git work tree)."""
    names = "\n".join(str(p.relative_to(ROOT)) for p in paths)
    try:
        done = subprocess.run(["git", "check-ignore", "--stdin"], cwd=ROOT, input=names, capture_output=True, text=True)
    except (OSError, subprocess.SubprocessError):
        return set()
    return {ROOT / line for line in done.stdout.splitlines() if line}


def broken(markdown: Path) -> list[str]:
    targets = {t: (markdown.parent / t.split("#")[0]).resolve() for t in links(markdown.read_text())}
    inside = {t: p for t, p in targets.items() if p.is_relative_to(ROOT)}
    lost = [f"{t} (outside the repository)" for t in targets if t not in inside]
    lost += [f"{t} (no such file)" for t, p in inside.items() if not p.exists()]
    hidden = ignored([p for p in inside.values() if p.exists()])
    lost += [f"{t} (git ignores it: generated, not in the repository)" for t, p in inside.items() if p in hidden]
    return lost


MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("markdown", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_of_the_repository(markdown):
    assert broken(markdown) == []


def test_links_finds_links_and_images_but_not_urls_anchors_or_code():
    text = (
        "[a](notebooks/00.ipynb) ![b](docs/x.png) [c](https://example.org) <http://127.0.0.1:8001/>\n"
        "[d](#lessons) [e](mailto:x@y) `[f](not/a/link)` [g](data/README.md#runs)\n"
        "```\n[h](in/a/fence)\n```\n"
    )
    assert links(text) == ["notebooks/00.ipynb", "docs/x.png", "data/README.md#runs"]


def test_a_missing_ignored_or_outside_file_is_broken():
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT, capture_output=True, text=True)
    if inside.stdout.strip() != "true":
        pytest.skip("not a git work tree: what git ignores cannot be told")
    page = ROOT / "docs" / ".link-check-probe.md"  # inside the repository, both removed at once
    made = ROOT / "docs" / "__pycache__" / "link-check-probe.png"  # there, but git ignores it: no clone has it
    made.parent.mkdir(exist_ok=True)
    made.write_bytes(b"")
    page.write_text(
        "[ok](reference/README.md) [gone](no/such.png) [made](__pycache__/link-check-probe.png) [out](../../x.md)"
    )
    try:
        found = broken(page)
    finally:
        page.unlink()
        made.unlink()
        if not any(made.parent.iterdir()):
            made.parent.rmdir()
    assert sorted(found) == [
        "../../x.md (outside the repository)",
        "__pycache__/link-check-probe.png (git ignores it: generated, not in the repository)",
        "no/such.png (no such file)",
    ]
