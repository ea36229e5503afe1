"""Run folders: published atomically, never overwritten, and only complete ones are read back."""

import json
import re

import pandas as pd
import pytest

from labserver.harness.rows import results
from labserver.paths import runs_dir


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))


def _manifest(run_id: str, lesson: str = "t", started_at: str = "2026-01-01T00:00:00+00:00", **row) -> dict:
    result = {"run_id": run_id, "lesson": lesson, "pattern": "gather", "users": 10, "rps": 99.0, "valid": True,
              "started_at": started_at, **row}  # fmt: skip
    return {"run_id": run_id, "lesson": lesson, "status": "ok", "result": result}


def _history() -> pd.DataFrame:
    return pd.DataFrame({"second": [0, 1], "rps": [90, 99], "p95_ms": [12.0, 11.0], "failures": [0, 0]})


def _publish(pattern: str = "gather", users: int = 10, **row) -> results.RunResult:
    run_id = results.new_run_id(pattern, users)
    return results.finish(results.partial_dir(run_id), _manifest(run_id, **row), _history())


def test_run_ids_are_unique_and_readable():
    ids = {results.new_run_id("gather", 10) for _ in range(50)}
    assert len(ids) == 50
    assert all("-gather-u10-" in i for i in ids)


def test_partial_dir_is_hidden_and_never_reused():
    path = results.partial_dir("r1")
    assert path == runs_dir() / ".partial-r1"
    with pytest.raises(FileExistsError):
        results.partial_dir("r1")


def test_finish_publishes_the_folder():
    run_id = results.new_run_id("gather", 10)
    tmp = results.partial_dir(run_id)
    (tmp / "locust.log").write_text("kept")
    saved = results.finish(tmp, _manifest(run_id), _history())
    assert saved.path == runs_dir() / run_id
    assert not tmp.exists()
    assert json.loads((saved.path / "manifest.json").read_text())["run_id"] == run_id
    assert (saved.path / "locust.log").read_text() == "kept"
    pd.testing.assert_frame_equal(pd.read_csv(saved.path / "history.csv"), _history())
    assert saved.valid
    assert saved.frame.loc[0, "rps"] == 99.0


def test_a_second_finish_never_overwrites_a_run():
    first = _publish()
    run_id = first.manifest["run_id"]
    again = runs_dir() / ".partial-again"
    again.mkdir()
    with pytest.raises(OSError):
        results.finish(again, _manifest(run_id, rps=1.0), _history())
    assert json.loads((first.path / "manifest.json").read_text())["result"]["rps"] == 99.0


def test_load_runs_reads_complete_runs_only():
    a = _publish(lesson="one", started_at="2026-01-01T00:00:02+00:00")
    b = _publish(lesson="one", started_at="2026-01-01T00:00:01+00:00")
    _publish(lesson="two")
    # a half-written run, even one whose manifest is already there, is not a run
    partial = results.partial_dir("half")
    (partial / "manifest.json").write_text(json.dumps(_manifest("half")))
    (runs_dir() / "no-manifest").mkdir()
    (runs_dir() / "broken").mkdir()
    (runs_dir() / "broken" / "manifest.json").write_text("{not json")

    everything = results.load_runs()
    assert len(everything) == 3
    assert "half" not in set(everything["run_id"])
    one = results.load_runs("one")
    assert list(one["run_id"]) == [b.manifest["run_id"], a.manifest["run_id"]]  # oldest first


def test_load_runs_of_nothing_is_empty(tmp_path):
    assert results.load_runs().empty
    assert results.load_runs(root=tmp_path / "nowhere").empty


def test_environment_says_what_ran():
    env = results.environment()
    assert env["cpu_count"] >= 1
    assert env["python"].count(".") == 2
    assert env["packages"]["fastapi"]
    assert "git_commit" in env


def test_table_and_compare():
    frame = pd.DataFrame(
        {"pattern": ["a", "b", "a", "b"], "users": [10, 10, 80, 80], "rps": [100.04, 50.0, 400.0, 100.0],
         "valid": True, "extra": 1}
    )  # fmt: skip
    t = results.table(frame)
    assert list(t.columns) == ["pattern", "label", "users", "rps", "valid"]
    assert t["rps"].iloc[0] == 100.0
    c = results.compare(frame, "rps", "a", "b")
    assert list(c["ratio"]) == [pytest.approx(2.0008), pytest.approx(4.0)]


def test_the_table_shows_each_patterns_label_and_keeps_its_name():
    frame = pd.DataFrame({"pattern": ["threadpool", "gather"], "users": [10, 10], "rps": [99.0, 98.0], "valid": True})
    t = results.table(frame)
    assert list(t["label"]) == ["def (thread pool)", "async def + gather"]
    assert list(t["pattern"]) == ["threadpool", "gather"]  # the name the code filters on
    assert "label" not in frame  # the runs themselves are left as they were


def test_in_order_lays_the_runs_rows_out_in_the_order_given():
    measured = {key: results.RunResult({"pattern": key[0], "users": key[1]}, _history(), runs_dir(), {})
                for key in [("a", 50), ("b", 5), ("a", 5)]}  # fmt: skip
    frame = results.in_order(measured, [("a", 5), ("a", 50), ("b", 5)])
    assert list(zip(frame.pattern, frame.users, strict=True)) == [("a", 5), ("a", 50), ("b", 5)]


def test_what_was_measured_beside_a_run_joins_its_row_once_and_its_record_stays():
    run = _publish(lesson="one")
    run_id = run.manifest["run_id"]
    results.attach(run_id, {"cheap_p95_ms": 12.5, "where": "event loop"})
    row = results.load_runs("one").iloc[0]
    assert (row["cheap_p95_ms"], row["where"], row["rps"]) == (12.5, "event loop", 99.0)
    assert "cheap_p95_ms" not in json.loads((run.path / "manifest.json").read_text())["result"]
    with pytest.raises(FileExistsError, match="never overwritten"):
        results.attach(run_id, {"cheap_p95_ms": 1.0})
    assert results.load_runs("one").iloc[0]["cheap_p95_ms"] == 12.5


def test_a_column_measured_beside_a_run_is_declared_or_refused():
    run_id = _publish(lesson="one").manifest["run_id"]
    with pytest.raises(ValueError, match=re.escape("undeclared in columns.py: ['cheap_p99_ms']")):
        results.attach(run_id, {"cheap_p95_ms": 12.5, "cheap_p99_ms": 20.0})
    assert "cheap_p95_ms" not in results.load_runs("one")  # refused before anything was written


def test_nothing_is_attached_to_a_run_that_is_not_there():
    with pytest.raises(FileNotFoundError, match="no run nowhere"):
        results.attach("nowhere", {"cheap_p95_ms": 1.0})


def test_a_run_s_window_is_its_start_and_its_start_plus_its_length():
    run = _publish(window_start=100.0, window_s=8.5)
    assert run.window == (100.0, 108.5) == results.window(run.row)
