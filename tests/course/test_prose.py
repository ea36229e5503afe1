"""Lessons read as a course, not a lab notebook: a short main path, a frame, solutions, no history of numbers.

The main path is a lesson's markdown outside collapsed `<details>` blocks (fenced code left out);
depth lives in those blocks, and the history of a number lives in docs/evidence.md.
"""

import json
import re

import pytest

from labserver.paths import NOTEBOOKS, ROOT

LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
MAIN_PATH_WORDS = 900
# A number's history: what it read in which batch, what a claim used to say, the host's steal time.
HISTORY = re.compile(
    r"used to (read|say)|\b(in|over|across) (\d+|two|three|four|five|eleven) batches|\bevery batch\b|\bbatch \d"
    r"|\bsteal|\bREPEAT\b|this session|\bcommit [0-9a-f]{7}|\b[0-9a-f]{7,40}\b(?=\W*\))",
    re.IGNORECASE,
)
DETAILS = re.compile(r"<details.*?</details>", re.DOTALL | re.IGNORECASE)
FENCED = re.compile(r"```.*?```", re.DOTALL)


def _cells(path, kind):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == kind]


def main_path(markdown: str) -> str:
    return FENCED.sub(" ", DETAILS.sub(" ", markdown))


def history(text: str) -> list[str]:
    return [text[max(0, m.start() - 40) : m.end() + 20] for m in HISTORY.finditer(text)]


def test_main_path_counts_what_is_outside_collapsed_blocks():
    md = "one two\n<details><summary>Deeper</summary>\n\nthree four five\n\n</details>\n```python\nsix\n```\nseven"
    assert len(main_path(md).split()) == 3


@pytest.mark.parametrize("text", ["it used to read 0.93", "0.95-0.99 over five batches", "the host's steal time",
                                  "REPEAT=5 on a fresh clone", "read 1.02 in every batch"])  # fmt: skip
def test_history_is_recognised(text):
    assert history(text)


@pytest.mark.parametrize("text", ["the batch run sets this", "a sweep of five users", "throughput over ten runs"])
def test_plain_teaching_is_not_history(text):
    assert not history(text)


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_main_path_stays_short(path):
    words = len(main_path("\n".join(_cells(path, "markdown"))).split())
    assert words <= MAIN_PATH_WORDS, f"{path.stem}: {words} words on the main path; fold depth into <details>"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_no_history_of_numbers_in_a_lesson(path):
    comments = [line for cell in _cells(path, "code") for line in cell.splitlines() if "#" in line]
    found = history("\n".join([*_cells(path, "markdown"), *comments]))
    assert not found, f"{path.stem}: history belongs in docs/evidence.md: {found}"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_lesson_opens_with_its_frame(path):
    first = _cells(path, "markdown")[0]
    for line in ("**You will see:**", "**Read first:**", "**Run time here:**"):
        assert line in first, f"{path.stem}: its first cell lacks {line}"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_exercise_has_a_solution(path):
    md = "\n".join(_cells(path, "markdown"))
    exercises = md.split("## Exercises", 1)[1] if "## Exercises" in md else ""
    asked = len(re.findall(r"^\d+\. ", exercises, re.MULTILINE))
    solved = len(re.findall(r"<summary>\s*Solution", exercises))
    assert asked and solved >= asked, f"{path.stem}: {asked} exercises, {solved} solutions"


def test_glossary_and_evidence_exist():
    assert (NOTEBOOKS / "glossary.md").read_text().count("\n## ") >= 20
    assert "## " in (ROOT / "docs" / "evidence.md").read_text()


@pytest.mark.parametrize("path", [p for p in LESSONS if not p.stem.startswith("99")], ids=lambda p: p.stem)
def test_in_a_hurry_is_collapsed_above_the_prediction(path):
    # The answer, read before the Predict cell, would give away what the learner is asked to predict: it stays one
    # click away for the hurried, and off the main path for everyone else (the summary, 99, predicts nothing)
    markdown = _cells(path, "markdown")
    hurry = next((i for i, cell in enumerate(markdown) if "<summary><b>In a hurry?</b>" in cell), None)
    assert hurry in (1, 2), f"{path.stem}: no collapsed In a hurry under its frame"
    assert "Your prediction" not in "\n".join(markdown[:hurry]), f"{path.stem}: In a hurry comes after a prediction"
    assert not any("In a hurry" in main_path(cell) for cell in markdown), f"{path.stem}: In a hurry on the main path"
