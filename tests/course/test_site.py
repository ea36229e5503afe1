import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from labserver.course import executed, site
from labserver.paths import NOTEBOOKS

START = "2026-11-23T23:00:00.400000+00:00"
END = "2026-11-23T23:01:00.000000+00:00"


def notebook(title: str, *outputs: dict, start: str = START, end: str = END, exception=None) -> dict:
    """A small executed notebook as papermill leaves it: metadata with its times, a title cell, one code cell."""
    title_cell = {
        "cell_type": "markdown",
        "id": "title",
        "metadata": {},
        "source": f"# {title}\n\nWhat the lesson does.",
    }
    code = {
        "cell_type": "code",
        "id": "run",
        "metadata": {},
        "execution_count": 1,
        "source": "x",
        "outputs": [*outputs],
    }
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"papermill": {"start_time": start, "end_time": end, "exception": exception}},
        "cells": [title_cell, code],
    }


def stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def manifest(lesson: str, started_at: str, batch: str, cpu_count: int = 2) -> dict:
    env = {"cpu_count": cpu_count, "usable_cores": 2.0, "platform": "Linux-x86_64", "python": "3.11.7"}
    return {
        "lesson": lesson,
        "started_at": started_at,
        "environment": {**env, "git_commit": "abc123"},
        "result": {"batch": batch},
    }


@pytest.fixture
def batch(tmp_path):
    """data/executed with lessons 00 and 08 (a lesson the code does not know by name), and notebooks/ with 09 unrun."""
    ran = tmp_path / "executed"
    ran.mkdir()
    verdicts = stream("[PASS] one: measured 1\n[FAIL] two: measured 2\n[SKIP] three: needs two CPUs\n")
    (ran / "00_start_here.ipynb").write_text(json.dumps(notebook("00 · Start here", verdicts)))
    (ran / "08_new_lesson.ipynb").write_text(json.dumps(notebook("08 · A new lesson", stream("[PASS] a: 1\n"))))
    (ran / ".partial-01_async-123.ipynb").write_text("{}")  # a lesson still running: never a page
    source = tmp_path / "notebooks"
    source.mkdir()
    (source / "09_later.ipynb").write_text(json.dumps(notebook("09 · Later")))
    runs = [
        manifest("00_start_here", "2026-11-23T23:00:00+00:00", "b2"),  # in the lesson's first second
        manifest("00_start_here", "2026-11-23T23:00:30+00:00", "b2"),
        manifest("00_start_here", "2026-11-23T22:00:00+00:00", "b1"),  # an earlier batch's run of the same lesson
        manifest("01_async_vs_sync", "2026-11-23T23:00:30+00:00", "b2"),  # another lesson's
    ]
    return executed.lessons(ran, runs, notebooks=source)


def test_lessons_are_the_executed_ones_and_the_unrun_in_order(batch):
    assert [lesson.name for lesson in batch] == ["00_start_here", "08_new_lesson", "09_later"]
    assert [lesson.executed for lesson in batch] == [True, True, False]
    assert batch[2].title == "09 · Later" and batch[2].when() == "not run in this batch"


def test_a_lessons_runs_are_those_of_its_name_that_ran_while_it_ran(batch):
    lesson = batch[0]
    assert lesson.runs == 2
    assert lesson.batches == ["b2"] and lesson.commits == ["abc123"]
    assert [str(m) for m in lesson.machines] == ["2 CPUs, Linux-x86_64, Python 3.11.7"]
    assert lesson.when() == "2026-11-23 23:00–23:01 UTC"
    assert batch[1].runs == 0 and batch[1].source() == "no runs of its own"


def test_claims_are_counted_from_what_the_lesson_printed(batch):
    assert batch[0].claims == {"PASS": 1, "FAIL": 1, "SKIP": 1}
    assert site._claims(batch[0]) == "1 passed, 1 failed, 1 not shown here"


def test_a_machine_says_when_fewer_cores_were_usable():
    assert str(executed.Machine(4, 1.5, "Linux", "3.12")) == "4 CPUs (1.5 usable), Linux, Python 3.12"
    assert str(executed.Machine(2, 2.0, "Linux", "3.12")) == "2 CPUs, Linux, Python 3.12"


def test_a_new_lesson_gets_a_page_and_a_line_without_edits(batch):
    chapters = [c["file"] for c in site.toc(batch)["chapters"]]
    # the decision card right after the index; 09 has not run: no page; the glossary and the articles follow
    assert chapters == [
        "lessons/card",
        "lessons/00_start_here",
        "lessons/08_new_lesson",
        "lessons/glossary",
        "lessons/articles",
    ]
    index = site.index(batch)
    assert "[08 · A new lesson](lessons/08_new_lesson.ipynb)" in index
    assert "| 09 · Later |  | not run in this batch |" in index
    assert "**Measured on** 2 CPUs, Linux-x86_64, Python 3.11.7." in index


def test_lessons_from_several_machines_get_a_machine_column(tmp_path):
    ran = tmp_path / "executed"
    ran.mkdir()
    (ran / "00_a.ipynb").write_text(json.dumps(notebook("00 · A")))
    (ran / "01_b.ipynb").write_text(json.dumps(notebook("01 · B")))
    runs = [
        manifest("00_a", "2026-11-23T23:00:10+00:00", "x", 2),
        manifest("01_b", "2026-11-23T23:00:10+00:00", "y", 8),
    ]
    index = site.index(executed.lessons(ran, runs, notebooks=tmp_path))
    assert "| lesson | claims | ran | machine | commit · batch |" in index
    assert "8 CPUs (2 usable)" in index


def test_a_lesson_cut_short_has_no_end_and_the_index_dates_the_others(tmp_path):
    ran = tmp_path / "executed"
    ran.mkdir()
    (ran / "00_a.ipynb").write_text(json.dumps(notebook("00 · A")))
    (ran / "01_b.ipynb").write_text(json.dumps(notebook("01 · B", start="2026-11-24T01:00:00+00:00", end=None)))
    found = executed.lessons(ran, [], notebooks=tmp_path)
    assert found[1].when() == "date unknown"
    assert "**When:** 2026-11-23 23:00 to 2026-11-23 23:01 UTC." in site.index(found)


def test_the_note_sits_under_the_title_and_latex_forms_are_dropped(batch):
    source = {"text/html": "<pre>code</pre>", "text/latex": "\\begin{Verbatim}", "text/plain": "code"}
    latex_only = {"text/latex": "$x^2$"}
    lesson = batch[0]
    nb = json.loads(lesson.notebook.read_text())
    nb["cells"][1]["outputs"] = [
        {"output_type": "execute_result", "data": d, "metadata": {}} for d in (source, latex_only)
    ]
    lesson.notebook.write_text(json.dumps(nb))
    copy = site.lesson_copy(lesson)
    first = copy["cells"][0]["source"]
    assert first.startswith("# 00 · Start here\n\n```{note}\n**Measured** 2026-11-23 23:00–23:01 UTC")
    assert first.endswith("What the lesson does.")
    assert len(copy["cells"]) == 2 and copy["cells"][0]["id"] == "title"
    outputs = copy["cells"][1]["outputs"]
    assert set(outputs[0]["data"]) == {"text/html", "text/plain"}  # Sphinx would count the LaTeX as an equation
    assert outputs[1]["data"] == latex_only  # the only form it has: kept


def test_a_notebook_without_a_title_gets_the_note_as_its_own_first_cell(batch):
    lesson = batch[1]
    nb = json.loads(lesson.notebook.read_text())
    nb["cells"] = nb["cells"][1:]
    lesson.notebook.write_text(json.dumps(nb))
    cells = site.lesson_copy(lesson)["cells"]
    assert cells[0]["id"] == site.NOTE_ID and cells[1]["id"] == "run"


def test_the_config_executes_nothing_and_names_no_remote_asset():
    config = site.config()
    assert config["execute"]["execute_notebooks"] == "off"
    assert "dollarmath" not in config["parse"]["myst_enable_extensions"]  # MathJax would come from a CDN
    assert config["launch_buttons"]["thebe"] is False
    assert config["sphinx"]["config"]["nb_ipywidgets_js"] == {}
    assert "http" not in yaml.safe_dump(config)


def test_write_book_starts_from_nothing(batch, tmp_path):
    out = tmp_path / "book"
    (out / "lessons").mkdir(parents=True)
    (out / "lessons" / "05_gone.ipynb").write_text("{}")
    site.write_book(out, batch)
    pages = ["00_start_here.ipynb", "08_new_lesson.ipynb", "articles.md", "card.md", "glossary.md"]
    assert sorted(p.name for p in (out / "lessons").iterdir()) == pages
    assert yaml.safe_load((out / "_toc.yml").read_text())["root"] == "index"
    assert yaml.safe_load((out / "_config.yml").read_text())["execute"]["execute_notebooks"] == "off"


def test_remote_assets_are_scripts_styles_images_and_css_urls_not_links(tmp_path):
    (tmp_path / "lessons").mkdir()
    (tmp_path / "index.html").write_text(
        '<script src="_static/local.js"></script><script async src="https://cdn.example/mathjax.js"></script>'
        '<link rel="stylesheet" href="//fonts.example/font.css"><a href="https://example.org/">a link</a>'
    )
    (tmp_path / "lessons" / "a.html").write_text('<img src="http://example.org/x.png"><img src="../_images/y.png">')
    (tmp_path / "theme.css").write_text(
        "@font-face { src: url('https://fonts.example/f.woff2') } a { b: url(local.png) }"
    )
    assert site.remote_assets(tmp_path) == [
        "index.html: https://cdn.example/mathjax.js",
        "index.html: //fonts.example/font.css",
        "lessons/a.html: http://example.org/x.png",
        "theme.css: https://fonts.example/f.woff2",
    ]
    (tmp_path / "index.html").write_text('<script src="_static/local.js"></script><a href="https://example.org/">a</a>')
    (tmp_path / "lessons" / "a.html").write_text("")
    (tmp_path / "theme.css").write_text("")
    assert site.remote_assets(tmp_path) == []


def test_check_fails_on_a_remote_asset_and_on_an_empty_folder(tmp_path, capsys):
    assert site.main(["--check", str(tmp_path)]) == 1  # no page at all is no site
    (tmp_path / "index.html").write_text('<script src="https://cdn.example/x.js"></script>')
    assert site.main(["--check", str(tmp_path)]) == 1
    assert "remote asset: index.html: https://cdn.example/x.js" in capsys.readouterr().err
    (tmp_path / "index.html").write_text("<p>offline</p>")
    assert site.main(["--check", str(tmp_path)]) == 0


def test_no_executed_lesson_is_an_error_that_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    assert site.main(["--out", str(tmp_path / "book")]) == 1
    assert "make figures" in capsys.readouterr().err


DEEPER = (
    "<details>\n<summary><b>Deeper:</b> the model behind the <code>predicted_rps</code> column</summary>\n\n"
    "Little's law, with `io_ms` in seconds.\n\n- one\n- two\n\n</details>"
)
EXERCISES = """## Exercises

1. Set `workers` to 1. Which endpoints change?

   <details><summary>Solution</summary>

   Only the `def` endpoint.

   ```python
   # a comment, not a heading
   await asyncio.gather(a(), b())
   ```

   </details>

2. Why?

   <details><summary>Solution</summary>

   Because.

   </details>
"""


def test_a_whole_cell_collapsed_block_is_read_with_its_title_as_plain_text():
    assert site.collapsed(DEEPER) == ["Deeper: the model behind the predicted_rps column"]
    assert site.collapsed("No block here: a `<b>` is not one.") == []


def test_solutions_indented_in_list_items_are_read_where_they_stand():
    assert site.collapsed(EXERCISES) == ["Solution", "Solution"]


UNKNOWN = {
    "text glued to the summary": "<details>\n<summary>T</summary>\ntext\n\n</details>",
    "an attribute": "<details open>\n<summary>T</summary>\n\ntext\n\n</details>",
    "text before a whole-cell block": "Intro.\n\n<details>\n<summary>T</summary>\n\ntext\n\n</details>",
    "a solution not indented": "1. Q\n\n<details><summary>Solution</summary>\n\ntext\n\n</details>",
    "a solution's line out of its item": "1. Q\n\n   <details><summary>Solution</summary>\n\n   a\nb\n\n   </details>",
    "an item right after the close": "1. Q\n\n   <details><summary>S</summary>\n\n   a\n\n   </details>\n2. R",
    "no close": "<details>\n<summary>T</summary>\n\ntext",
    "nested": "<details>\n<summary>T</summary>\n\n<details>\n<summary>U</summary>\n\nx\n\n</details>\n\n</details>",
}


@pytest.mark.parametrize("source", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_a_collapsed_block_of_another_form_is_an_error_naming_the_lesson_and_cell(batch, source):
    lesson = batch[0]
    nb = json.loads(lesson.notebook.read_text())
    nb["cells"].append({"cell_type": "markdown", "id": "odd-one", "metadata": {}, "source": source})
    lesson.notebook.write_text(json.dumps(nb))
    with pytest.raises(ValueError, match=r"^00_start_here\.ipynb, cell odd-one, line \d+: a collapsed block"):
        site.lesson_copy(lesson)


LESSONS = sorted(NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_collapsed_block_of_a_committed_lesson_is_in_a_form_the_site_shows(path):
    cells = json.loads(path.read_text())["cells"]
    for cell in cells:
        if cell["cell_type"] == "markdown":
            site.collapsed("".join(cell["source"]), where=f"{path.name}, cell {cell.get('id')}")


def test_the_copy_keeps_collapsed_blocks_as_the_lesson_writes_them(batch):
    lesson = batch[0]
    nb = json.loads(lesson.notebook.read_text())
    nb["cells"] += [
        {"cell_type": "markdown", "id": i, "metadata": {}, "source": s} for i, s in [("d", DEEPER), ("e", EXERCISES)]
    ]
    lesson.notebook.write_text(json.dumps(nb))
    assert [c["source"] for c in site.lesson_copy(lesson)["cells"][-2:]] == [DEEPER, EXERCISES]


def _runs(batch_id: str, gather_rps: float) -> list[dict]:
    setting = {"users": 100, "tasks": 3, "io_ms": 200, "cpu_n": 0, "workers": 2, "threads": 40, "valid": True}
    lesson = {"lesson": "02_sequential_vs_gather", "batch": batch_id, **setting}
    return [{**lesson, "pattern": "sequential", "rps": 160.0}, {**lesson, "pattern": "gather", "rps": gather_rps}]


def test_the_card_page_reads_the_runs_of_the_lessons_batch(batch):
    runs = pd.DataFrame(_runs("b2", 480.0) + _runs("b1", 800.0))  # b1: an earlier batch, not the site's
    page = site.card_page(batch, runs)
    assert page.startswith("# What to write: the decision card\n")
    assert "**Measured:** 2 runs of batch b2, on 2 CPUs, Linux-x86_64, Python 3.11.7." in page
    assert "3.0× (gather / sequential, 3 waits, 100 users)" in page and "5.0×" not in page
    assert "[the decision card](lessons/card.md)" in site.index(batch)


def test_the_card_page_without_runs_says_how_to_make_them(batch, tmp_path):
    for runs in (pd.DataFrame(), pd.DataFrame(_runs("b1", 800.0))):  # nothing on disk; only another batch's
        assert "`make figures` runs every lesson" in site.card_page(batch, runs)
    site.write_book(tmp_path / "book", batch)
    assert "`make figures`" in (tmp_path / "book" / "lessons" / "card.md").read_text()


def _built(html: Path, page: str, cells: list[str]) -> None:
    """A built lesson page as the check reads it: its HTML, and its source where Sphinx keeps it."""
    (html / "lessons").mkdir(parents=True, exist_ok=True)
    (html / "lessons" / "a.html").write_text(page)
    (html / "_sources" / "lessons").mkdir(parents=True, exist_ok=True)
    nb = {"cells": [{"cell_type": "markdown", "source": c} for c in cells]}
    (html / "_sources" / "lessons" / "a.ipynb").write_text(json.dumps(nb))


NAV = '<nav><details><summary>Lessons</summary><a href="a.html">a</a></details></nav>'  # the theme's own
RAW = "<details>\n<summary>Solution</summary>\n<p>Because.</p>\n</details>"
DROPDOWN = '<details class="sd-sphinx-override sd-dropdown sd-card"><summary>T</summary><p>x</p></details>'
HIDDEN = '<details class="hide above-input"><summary>Show code</summary><pre>x</pre></details>'  # myst-nb's cell
PAGE = f"{NAV}<article class='bd-article'>{RAW}{DROPDOWN}{HIDDEN}</article>"  # two collapsed blocks


def test_check_counts_each_lessons_collapsed_blocks_against_its_source(tmp_path, capsys):
    _built(tmp_path, PAGE, [DEEPER, DEEPER])
    assert site.main(["--check", str(tmp_path)]) == 0
    assert "collapsed blocks: a 2" in capsys.readouterr().out
    _built(tmp_path, PAGE, [DEEPER, EXERCISES])  # three in the source
    assert site.dropdowns(tmp_path) == (
        {"a": 2},
        ["lessons/a.html: 3 collapsed blocks in its source, 2 in the page, 2 of them with parsed text"],
    )


def test_check_fails_on_unparsed_text_a_tag_shown_as_text_and_a_page_without_source(tmp_path, capsys):
    _built(tmp_path, PAGE.replace("<p>Because.</p>", "Because."), [DEEPER, DEEPER])  # Markdown left as text
    assert site.dropdowns(tmp_path)[1] == [
        "lessons/a.html: 2 collapsed blocks in its source, 2 in the page, 1 of them with parsed text"
    ]
    _built(tmp_path, PAGE, [DEEPER, DEEPER])
    (tmp_path / "lessons" / "b.html").write_text("<pre>&lt;details&gt;</pre>")
    assert site.main(["--check", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "collapsed blocks: lessons/b.html: no source beside it to count" in err
    assert "collapsed blocks: lessons/b.html: a <details> or <summary> tag shown as text" in err


@pytest.mark.slow
def test_the_built_site_loads_nothing_from_the_network(batch, tmp_path):
    """Jupyter Book builds the book of two lessons, one with show_source's three forms and collapsed blocks of both
    forms, and no page fetches anything: the blocks collapse in the page, their Markdown parsed."""
    pytest.importorskip("jupyter_book", reason="the `site` extra is not installed (make site installs it)")
    lesson = batch[0]
    nb = json.loads(lesson.notebook.read_text())
    forms = {
        "text/html": "<pre>def f(): pass</pre>",
        "text/latex": "\\begin{Verbatim}x\\end{Verbatim}",
        "text/plain": "x",
    }
    nb["cells"][1]["outputs"].append(
        {"output_type": "execute_result", "execution_count": 1, "data": forms, "metadata": {}}
    )
    nb["cells"] += [
        {"cell_type": "markdown", "id": i, "metadata": {}, "source": s} for i, s in [("d", DEEPER), ("e", EXERCISES)]
    ]
    lesson.notebook.write_text(json.dumps(nb))
    book = site.write_book(tmp_path / "book", batch)
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    command = [jupyter_book, "build", "--quiet", str(book), "--path-output", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    html = tmp_path / "_build" / "html"
    assert site.remote_assets(html) == []
    page = (html / "lessons" / "00_start_here.html").read_text()
    assert "Measured" in page and "def f(): pass" in page
    assert "08 · A new lesson" in (html / "index.html").read_text()
    assert site.dropdowns(html) == ({"00_start_here": 3, "08_new_lesson": 0}, [])
    assert "<li><p>Set <code" in page and "</details>\n</li>" in page  # a solution stays inside its list item
    assert "What to write: the decision card" in (html / "lessons" / "card.html").read_text()
