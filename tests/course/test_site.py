import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labserver.course import executed, site

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
    # 09 has not run: no page; the glossary and the articles follow the lessons
    assert chapters == ["lessons/00_start_here", "lessons/08_new_lesson", "lessons/glossary", "lessons/articles"]
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
    pages = ["00_start_here.ipynb", "08_new_lesson.ipynb", "articles.md", "glossary.md"]
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


@pytest.mark.slow
def test_the_built_site_loads_nothing_from_the_network(batch, tmp_path):
    """Jupyter Book builds the book of two lessons, one with show_source's three forms, and no page fetches anything."""
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
