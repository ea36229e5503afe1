import json
from pathlib import Path

import pandas as pd
import pytest

from labserver.course import batch
from labserver.course.claims import Claims
from labserver.paths import NOTEBOOKS


def test_lessons_are_the_numbered_notebooks_in_order():
    found = batch.lessons()
    assert found == sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert [nb.stem for nb in found][:2] == ["01_async_vs_sync", "02_sequential_vs_gather"]


def test_lessons_by_prefix():
    assert [nb.stem for nb in batch.lessons(["01"])] == ["01_async_vs_sync"]
    assert [nb.stem for nb in batch.lessons(["98_the", "01"])] == ["01_async_vs_sync", "98_the_instrument"]


def test_unknown_lesson_lists_the_lessons():
    with pytest.raises(SystemExit, match="98_the_instrument"):
        batch.lessons(["42"])


def test_unknown_profile_is_refused(capsys):
    with pytest.raises(SystemExit):
        batch.main(["--profile", "huge"])
    assert "invalid choice" in capsys.readouterr().err


def test_a_failed_lesson_is_written_aside_then_lands_under_its_final_name(tmp_path, monkeypatch):
    import papermill

    written = []

    def execute_notebook(input_path, output_path, **kwargs):
        written.append(Path(output_path))
        Path(output_path).write_text("the failed copy")  # papermill saves the notebook, then raises
        raise papermill.PapermillExecutionError(0, 1, "", "ValueError", "boom", [])

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)
    lesson = batch.lessons(["01"])[0]
    _, error, _ = batch.run_lesson(lesson, "quick", tmp_path)
    assert error == "ValueError: boom"
    assert written[0].parent == tmp_path and written[0].name.startswith(".partial-")  # never the final name
    assert [p.name for p in tmp_path.iterdir()] == [lesson.name]
    assert (tmp_path / lesson.name).read_text() == "the failed copy"


def _batch_verdicts(tmp_path, monkeypatch, sentence: str, value: float) -> list[dict]:
    """One batch's verdicts as the lessons write them (LAB_CLAIMS_FILE), with lesson 01's claim worded `sentence`."""
    path = tmp_path / f"claims-{value}.jsonl"
    monkeypatch.setenv("LAB_CLAIMS_FILE", str(path))
    runs = pd.DataFrame({"valid": [True]})
    first = Claims("01_async_vs_sync")
    first.between(sentence, value, low=2.0, key="async-beats-sync")
    first.valid("every run is a valid measurement", runs, key="runs-valid")
    Claims("02_sequential_vs_gather").valid("every run is a valid measurement", runs, key="runs-valid")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_repeat_table_follows_a_reworded_claim_by_its_key(tmp_path, monkeypatch):
    rounds = [
        _batch_verdicts(tmp_path, monkeypatch, "async / sync throughput", 3.0),
        _batch_verdicts(tmp_path, monkeypatch, "at ≥ 3× the pool: async / sync throughput (smallest)", 2.5),
    ]
    table = batch.robustness(rounds)
    assert list(table.columns[:3]) == ["lesson", "key", "claim"]
    assert list(zip(table["lesson"], table["key"], strict=True)) == [
        ("01_async_vs_sync", "async-beats-sync"),
        ("01_async_vs_sync", "runs-valid"),
        ("02_sequential_vs_gather", "runs-valid"),  # the same key in another lesson: another claim
    ]
    row = table.iloc[0]
    assert row["claim"] == "at ≥ 3× the pool: async / sync throughput (smallest)"  # the latest batch's sentence
    assert (row["passes"], row["batches"]) == (2, 2)
    assert row["median"] == pytest.approx(2.75)
    assert row["worst_margin"] == pytest.approx(0.5)
