"""`python -m labserver.course.site`: the executed lessons of the last batch as a Jupyter Book, for `make site`.

Writes the book's source into data/site/book/: _config.yml, _toc.yml, an index page that lists
every lesson with its claims and when and where it was measured, the decision card read from the
batch's runs, and a copy of each executed lesson (data/executed/) with that note under its title.
Everything is generated from what is on disk, so a new lesson appears once a batch has run it.
`make site` then builds the HTML into data/site/_build/html/ with Jupyter Book 1.x, which runs
nothing again (execute_notebooks: off) and fetches nothing: the site opens from the disk, without
a network.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import yaml

from labserver.course import card, executed, summary
from labserver.course.executed import Lesson
from labserver.harness.rows.results import load_runs
from labserver.paths import NOTEBOOKS, data_dir, runs_dir

TITLE = "Concurrency Lab"
LESSONS = "lessons"  # the lessons' folder inside the book
NOTE_ID = "site-measured-on"  # the id of the note's own cell, in a lesson whose first cell has no title


def config() -> dict:
    """The book's _config.yml: nothing executed, nothing fetched from the network at build or view time."""
    return {
        "title": TITLE,
        "author": TITLE,
        "copyright": "",
        "only_build_toc_files": True,
        "exclude_patterns": ["_build", "**.ipynb_checkpoints"],
        # The notebooks are the batch's record: re-running them would measure this machine, now.
        "execute": {"execute_notebooks": "off"},
        # Jupyter Book's defaults add dollarmath and linkify: a `$` in prose would ask for MathJax, which
        # Sphinx loads from a CDN, and the lessons have no formulas written in TeX.
        "parse": {"myst_enable_extensions": ["colon_fence"]},
        "html": {
            "use_repository_button": False,
            "use_issues_button": False,
            "use_edit_page_button": False,
            "comments": {"hypothesis": False, "utterances": False},  # both load their scripts from the network
            "analytics": {"google_analytics_id": "", "plausible_analytics_domain": ""},
        },
        "launch_buttons": {
            "notebook_interface": "jupyterlab",
            "binderhub_url": "",
            "jupyterhub_url": "",
            "thebe": False,  # thebe comes from unpkg.com
            "colab_url": "",
            "deepnote_url": "",
        },
        "sphinx": {
            "config": {
                # myst-nb would add require.js and the widgets' manager from CDNs to any page with widget
                # state; the lessons have none (the live view is an image), and an empty map keeps it so.
                "nb_ipywidgets_js": {},
                "html_show_sourcelink": False,
                "html_theme_options": {"use_download_button": False, "use_fullscreen_button": False},
            }
        },
    }


PAGES = [NOTEBOOKS / "glossary.md", NOTEBOOKS / "articles.md"]  # the course's pages that are not lessons
CARD = "card"  # the decision card's page, beside the glossary: its links to glossary.md resolve there


def toc(found: list[Lesson]) -> dict:
    """The book's _toc.yml: the index, the decision card, then every executed lesson in order."""
    return {
        "format": "jb-book",
        "root": "index",
        "chapters": [{"file": f"{LESSONS}/{CARD}"}]
        + [{"file": f"{LESSONS}/{lesson.name}"} for lesson in found if lesson.executed]
        + [{"file": f"{LESSONS}/{page.stem}"} for page in PAGES],
    }


def _claims(lesson: Lesson) -> str:
    if not lesson.executed:
        return ""
    c = lesson.claims
    text = f"{c['PASS']} passed, {c['FAIL']} failed" + (f", {c['SKIP']} not shown here" if c["SKIP"] else "")
    return text + (" — stopped early" if lesson.stopped else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def index(found: list[Lesson]) -> str:
    """The index page: what the site is, the machine of the batch, and every lesson with its claims and date."""
    # A lesson cut short (its batch killed) has a start and no end in its metadata.
    spans = [(x.started, x.ended) for x in found if x.executed and x.started and x.ended]
    lines = [
        f"# {TITLE}: the executed course",
        "",
        "The lessons as the last batch (`make figures`) ran them. Every table, chart and claim on these",
        "pages was measured then, on the machine named beside it; building this site ran nothing again.",
        "",
    ]
    machines = executed.machines(found)
    if machines:
        lines += ["**Measured on** " + "; ".join(str(m) for m in machines) + ".", ""]
    if spans:
        first, last = min(start for start, _ in spans), max(end for _, end in spans)
        lines += [f"**When:** {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC.", ""]
    # One machine (the usual case) is named once above; lessons from several get a column of their own.
    several = len(machines) > 1
    lines += ["| lesson | claims | ran | " + ("machine | " if several else "") + "commit · batch |"]
    lines.append("|---" * (4 + several) + "|")
    for lesson in found:
        name = lesson.title or lesson.name
        link = f"[{name}]({LESSONS}/{lesson.name}.ipynb)" if lesson.executed else name
        row = [link, _claims(lesson), lesson.when()]
        row += ["; ".join(str(m) for m in lesson.machines)] if several else []
        lines.append("| " + " | ".join(_cell(x) for x in [*row, lesson.source()]) + " |")
    lines += [
        "",
        "Each lesson's page says under its title when and where it ran; its claims table is at its",
        "*Check the claims* section. A lesson the batch has not run is listed without a page.",
        "",
        f"What to write in an endpoint, with the ratios this batch measured: [the decision card]({LESSONS}/{CARD}.md).",
        "",
    ]
    return "\n".join(lines)


CARD_INTRO = """\
Each row: a situation you meet in an endpoint, the pattern to write, its ceiling (a
[throughput](glossary.md) in requests per second, as the lab's model gives it), and the ratio the
batch measured in the lesson that shows it; lesson 99 shows the same card. `io`: how long one request
waits, in seconds; `cpu`: the CPU one request spends in its [worker](glossary.md); `threads`: FastAPI's
[thread pool](glossary.md) size per worker, 40 by default; `tasks`: the waits in one request;
`users`: the [Locust users](glossary.md) sending at once."""


def card_page(found: list[Lesson], runs: pd.DataFrame) -> str:
    """The decision card's page, read from the runs of the executed lessons' batch (all runs if none is named)."""
    lines = ["# What to write: the decision card", "", CARD_INTRO, ""]
    batches = list(dict.fromkeys(b for lesson in found for b in lesson.batches))
    # Lesson 99 keeps the current commit's runs; the site shows the batch, whichever commit is checked out now.
    if batches and "batch" in runs:
        runs = runs[runs["batch"].isin(batches)]
    runs = summary.lesson_runs(runs)
    if runs.empty:
        how = f"No runs of the batch are on disk in `{runs_dir()}`: `make figures` runs every lesson and keeps them."
        return "\n".join([*lines, how, ""])
    source = f"{len(runs)} runs" + (f" of batch {', '.join(batches)}" if batches else "")
    machines = "; ".join(str(m) for m in executed.machines(found)) or "machine unknown"
    return "\n".join([*lines, f"**Measured:** {source}, on {machines}.", "", card.markdown(card.card(runs))])


def note(lesson: Lesson) -> str:
    """The note put under a lesson's title in its copy: when and where it was measured, and its claims."""
    return (
        f"```{{note}}\n**Measured** {lesson.measured()}.\n\n"
        f"**Claims:** {_claims(lesson)}. This is the executed copy that `make figures` wrote; "
        "the site shows it as it ran.\n```"
    )


def _under_title(cells: list[dict], text: str) -> list[dict]:
    """The cells with `text` right under the first cell's `# title` line (a cell of its own if there is none)."""
    first = cells[0] if cells else {}
    lines = "".join(first.get("source", "")).splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    if first.get("cell_type") != "markdown" or at is None:
        return [{"cell_type": "markdown", "id": NOTE_ID, "metadata": {}, "source": text}, *cells]
    source = "".join(lines[: at + 1]).rstrip("\n") + "\n\n" + text + "\n\n" + "".join(lines[at + 1 :]).lstrip("\n")
    return [{**first, "source": source}, *cells[1:]]


def _html_only(output: dict) -> dict:
    """An output without its LaTeX form, where it has another (show_source's code has HTML, LaTeX and text).

    The HTML page shows the HTML form, yet myst-nb parses every form of an output for Sphinx, and a
    LaTeX one counts as an equation: Sphinx then loads MathJax, from a CDN, on that page and the index.
    """
    data = output.get("data")
    if not data or "text/latex" not in data or not ({"text/html", "text/plain"} & data.keys()):
        return output
    return {**output, "data": {k: v for k, v in data.items() if k != "text/latex"}}


# A collapsed block, in the two forms the lessons write: a whole cell, or a solution in a list item,
# indented to the item's text. The HTML keeps each tag's line as it is and parses the text between as
# Markdown, because blank lines set it apart (a CommonMark HTML block ends at a blank line): the
# browser's own <details> collapses it, inside its list item. Text glued to a tag would show unparsed.
CELL = re.compile(r"<details>\n<summary>(?P<title>[^\n]+)</summary>\n\n(?P<body>.+?)\n\n</details>\n*", re.DOTALL)
ITEM = re.compile(
    r"^(?P<indent>[ ]{2,})<details><summary>(?P<title>[^\n]+)</summary>\n\n(?P<body>.+?)\n\n(?P=indent)</details>"
    r"(?=\n\n|\n*\Z)",
    re.MULTILINE | re.DOTALL,
)
TAG = re.compile(r"</?(?:details|summary)\b", re.IGNORECASE)
FORMS = (
    "a whole cell `<details>\\n<summary>Title</summary>\\n\\ntext\\n\\n</details>`, or in a list item, "
    "indented to its text, `<details><summary>Solution</summary>`, a blank line, the text, a blank line, `</details>`"
)


def collapsed(source: str, where: str = "markdown") -> list[str]:
    """The titles of the collapsed blocks in a Markdown cell; a ValueError naming `where` for any other form."""
    whole = CELL.fullmatch(source)
    blocks = [whole] if whole else list(ITEM.finditer(source))
    # A tag outside every block, or inside a block's text (nested), is a form the site does not know;
    # so is an item's text line indented less than its tags, which would end the item and leave the block.
    wrong = [t.start() for t in TAG.finditer(source) if not any(b.start() <= t.start() < b.end() for b in blocks)]
    wrong += [b.start("body") + t.start() for b in blocks for t in TAG.finditer(b["body"])]
    for b in blocks if not whole else []:
        at = b.start("body")
        for line in b["body"].splitlines(keepends=True):
            wrong += [at] if line.strip() and not line.startswith(b["indent"]) else []
            at += len(line)
    if wrong:
        line = source.count("\n", 0, min(wrong)) + 1
        text = source.splitlines()[line - 1].strip()
        raise ValueError(
            f"{where}, line {line}: a collapsed block the site cannot show ({text!r}); write it as {FORMS}"
        )
    return [re.sub(r"<[^>]+>", "", b["title"]).strip() for b in blocks]


def lesson_copy(lesson: Lesson) -> dict:
    """The executed notebook for the site: the note under its title, and no LaTeX forms of outputs.

    Its collapsed blocks stay as the lesson writes them (see CELL): a ValueError names a cell with another form.
    """
    assert lesson.notebook is not None  # the site copies executed lessons only
    nb = json.loads(lesson.notebook.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") == "markdown":
            collapsed("".join(cell["source"]), f"{lesson.notebook.name}, cell {cell.get('id', i)}")
    cells = [{**c, "outputs": [_html_only(o) for o in c["outputs"]]} if "outputs" in c else c for c in nb["cells"]]
    return {**nb, "cells": _under_title(cells, note(lesson))}


def write_book(out: Path, found: list[Lesson], runs: pd.DataFrame | None = None) -> Path:
    """The book's source, from nothing: a lesson gone from the batch leaves no page behind.

    `runs` (`load_runs`) fill the decision card; without them its page says how to make them.
    """
    if out.exists():
        shutil.rmtree(out)
    (out / LESSONS).mkdir(parents=True)
    (out / "_config.yml").write_text(yaml.safe_dump(config(), sort_keys=False, allow_unicode=True))
    (out / "_toc.yml").write_text(yaml.safe_dump(toc(found), sort_keys=False))
    (out / "index.md").write_text(index(found))
    (out / LESSONS / f"{CARD}.md").write_text(card_page(found, pd.DataFrame() if runs is None else runs))
    for page in PAGES:  # beside the lessons, where their links to glossary.md and articles.md point
        shutil.copyfile(page, out / LESSONS / page.name)
    for lesson in found:
        if lesson.executed:
            (out / LESSONS / f"{lesson.name}.ipynb").write_text(json.dumps(lesson_copy(lesson), ensure_ascii=False))
    return out


REMOTE = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)  # http://, https:// and protocol-relative //host
CSS_URL = re.compile(r"""(?:url\(\s*|@import\s+)['"]?((?:https?:)?//[^'")\s]+)""", re.IGNORECASE)
ASSET_TAGS = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src", "video": "src"}


class _Assets(HTMLParser):
    """Every URL that a page loads by itself: scripts, stylesheets and icons, images, frames, media."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attr = ASSET_TAGS.get(tag)
        self.urls += [value for name, value in attrs if name == attr and value]


def remote_assets(html_dir: Path) -> list[str]:
    """What the built site would fetch from the network when opened: "page: url" for each, none if offline.

    A link a reader may click (<a href>) is no fetch; a page's own scripts, stylesheets, images and
    the stylesheets' url() and @import are.
    """
    found = []
    for page in sorted(html_dir.rglob("*.html")):
        parser = _Assets()
        parser.feed(page.read_text(errors="replace"))
        found += [f"{page.relative_to(html_dir)}: {url}" for url in parser.urls if REMOTE.match(url)]
    for sheet in sorted(html_dir.rglob("*.css")):
        found += [f"{sheet.relative_to(html_dir)}: {url}" for url in CSS_URL.findall(sheet.read_text(errors="replace"))]
    return found


class _Dropdowns(HTMLParser):
    """The collapsed blocks in a page's article, and how many of them hold parsed text (a <p>).

    A block is a <details> without a class (the lessons' own, see CELL) or a sphinx-design dropdown;
    the theme's navigation and myst-nb's hidden cells have <details> of their own classes.
    """

    def __init__(self):
        super().__init__()
        self.article = False
        self.open: list[int | None] = []  # per open <details>: its index in `rendered`, or None if not a block
        self.rendered: list[bool] = []

    def handle_starttag(self, tag, attrs):
        self.article |= tag == "article"
        classes = (dict(attrs).get("class") or "").split()
        if tag == "details":
            block = self.article and (not classes or "sd-dropdown" in classes)
            self.open.append(len(self.rendered) if block else None)
            self.rendered += [False] if block else []
        elif tag == "p" and self.open and self.open[-1] is not None:
            self.rendered[self.open[-1]] = True

    def handle_endtag(self, tag):
        self.article &= tag != "article"
        if tag == "details" and self.open:
            self.open.pop()


LEAK = re.compile(r"&lt;/?(?:details|summary)\b", re.IGNORECASE)  # a tag shown as text: unparsed Markdown


def dropdowns(html_dir: Path) -> tuple[dict[str, int], list[str]]:
    """Each lesson page's collapsed blocks, and "page: problem" where they differ from its source's.

    The source is the copy Sphinx keeps beside the HTML (_sources/), the notebook the page was built from.
    """
    counts, problems = {}, []
    for page in sorted((html_dir / LESSONS).glob("*.html")):
        name, sources = page.relative_to(html_dir), html_dir / "_sources" / LESSONS
        source = sources / f"{page.stem}.ipynb"
        if not source.is_file():
            # A Markdown page (the glossary, the articles, the card) is no lesson; a page with no source goes unchecked.
            problems += [] if (sources / f"{page.stem}.md").is_file() else [f"{name}: no source beside it to count"]
            continue
        cells = json.loads(source.read_text())["cells"]
        want = sum(len(collapsed("".join(c["source"]), str(name))) for c in cells if c["cell_type"] == "markdown")
        parser = _Dropdowns()
        parser.feed(page.read_text(errors="replace"))
        counts[page.stem] = len(parser.rendered)
        if len(parser.rendered) != want or not all(parser.rendered):
            problems.append(
                f"{name}: {want} collapsed blocks in its source, {len(parser.rendered)} in the page, "
                f"{sum(parser.rendered)} of them with parsed text"
            )
    for page in sorted(html_dir.rglob("*.html")):
        if LEAK.search(page.read_text(errors="replace")):
            problems.append(f"{page.relative_to(html_dir)}: a <details> or <summary> tag shown as text")
    return counts, problems


def check(html_dir: Path) -> int:
    """The built site's check: nothing remote, and each lesson's collapsed blocks collapsed, with their text."""
    remote = remote_assets(html_dir)
    counts, problems = dropdowns(html_dir)
    for line in remote:
        print(f"remote asset: {line}", file=sys.stderr)
    for line in problems:
        print(f"collapsed blocks: {line}", file=sys.stderr)
    pages = sum(1 for _ in html_dir.rglob("*.html"))
    print(f"{pages} pages in {html_dir}: " + (f"{len(remote)} remote assets" if remote else "nothing remote"))
    if counts:
        print("collapsed blocks: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
    return 1 if remote or problems or not pages else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labserver.course.site", description=__doc__)
    parser.add_argument("--out", type=Path, default=None, help="the book's source folder (default: data/site/book)")
    parser.add_argument("--check", type=Path, metavar="HTML_DIR", help="only check a built site (see `check`)")
    args = parser.parse_args(argv)
    if args.check:
        return check(args.check)
    found = executed.lessons()
    if not any(lesson.executed for lesson in found):
        print(f"no executed lesson in {data_dir() / 'executed'}: run `make figures` first", file=sys.stderr)
        return 1
    try:
        out = write_book(args.out or data_dir() / "site" / "book", found, load_runs())
    except ValueError as error:  # a lesson's collapsed block in a form the site cannot show: which, and where
        print(error, file=sys.stderr)
        return 1
    print(f"book source: {out} ({sum(lesson.executed for lesson in found)} lessons)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
