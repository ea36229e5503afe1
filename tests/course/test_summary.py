"""Lesson 99's summary: runs on disk against the model, and the articles' headlines beside ours."""

import json
import math

import pandas as pd
import pytest

from labserver.charts.summary import chart
from labserver.course import summary
from labserver.course.summary import headlines, overview, patterns, select, valid_ratios
from labserver.harness.rows.results import load_runs
from labserver.theory import published
from labserver.theory.published import HORACEG, LOCUST_GATHER, PENA, SPEED_UP_1, Headline


def _run(**row):
    return {"lesson": "01_async_vs_sync", "valid": True, "ratio": 1.0, "started_at": "2026-01-01T00:00:00", **row}


RUNS = pd.DataFrame([
    _run(pattern="threadpool", users=80, rps=400.0, p95_ms=200.0, ratio=0.98),
    _run(pattern="sequential", users=80, rps=800.0, p95_ms=100.0, ratio=0.97),
    _run(pattern="threadpool", users=160, rps=400.0, p95_ms=400.0, ratio=0.96),
    _run(pattern="sequential", users=160, rps=1500.0, p95_ms=105.0, ratio=0.94),
    _run(pattern="sequential", users=100, rps=9999.0, p95_ms=1.0, ratio=3.0, valid=False),  # invalid: never used
    _run(lesson="06_client_side", pattern="sequential", client="aiohttp", users=100, requests=1000, rps=1600.0),
    _run(lesson="06_client_side", pattern="sequential", client="threadpool", users=100, requests=1000, rps=400.0,
         ratio=0.5),
])  # fmt: skip
P95 = Headline(SPEED_UP_1, "01", "p95", 0.5, "150 / 300", "p95_ms", {"pattern": "sequential"},
               {"pattern": "threadpool"}, {"users": 100})  # fmt: skip


def test_select_keeps_valid_runs_nearest_the_articles_setting():
    chosen = select(RUNS[RUNS["lesson"] == "01_async_vs_sync"], {"pattern": "sequential"}, {"users": 100})
    assert list(chosen["users"]) == [80]  # 80 is nearer 100 than 160 on a log scale; the invalid 100 is ignored


def test_a_headline_is_the_same_ratio_taken_on_our_runs():
    row = headlines(RUNS, [P95]).iloc[0]
    assert row["ours"] == pytest.approx(100 / 200)
    assert row["ours / published"] == pytest.approx(1.0)
    assert "users 80" in row["our setting"]


def test_a_headline_without_a_denominator_is_the_value_itself():
    h = Headline(LOCUST_GATHER, "01", "ratio", 0.99, "", "ratio", {"pattern": "threadpool"}, None, {"users": 500})
    assert headlines(RUNS, [h]).iloc[0]["ours"] == pytest.approx(0.96)


def test_a_headline_can_filter_on_columns_only_one_lesson_has():
    h = Headline(HORACEG, "06", "aiohttp / pool", 3.26, "", "rps", {"client": "aiohttp"}, {"client": "threadpool"},
                 {"requests": 1000, "users": 1000})  # fmt: skip
    assert headlines(RUNS, [h]).iloc[0]["ours"] == pytest.approx(4.0)


def test_a_headline_without_runs_says_so():
    h = Headline(PENA, "07", "db", 1.79, "", "rps", {"pattern": "async_select"}, {"pattern": "sync_select"})
    row = headlines(RUNS, [h]).iloc[0]
    assert math.isnan(row["ours"]) and "no runs of lesson 07" in row["our setting"]
    h = Headline(LOCUST_GATHER, "01", "gather", 3.0, "", "rps", {"pattern": "gather"}, {"pattern": "sequential"})
    assert "no valid runs of this kind" in headlines(RUNS, [h]).iloc[0]["our setting"]


def test_published_figures_are_labelled_ratios():
    for h in published.HEADLINES:
        assert h.published > 0 and math.isfinite(h.published), h
        assert h.article in published.ARTICLES and len(h.lesson) == 2 and h.source
    sync_baseline = next(h for h in published.HEADLINES if h.column == "ratio")
    assert sync_baseline.published == pytest.approx(5.29 / (2 * 40 / 15))  # the model explains the article's table


def test_patterns_groups_by_lesson_pattern_and_client():
    table = patterns(RUNS).set_index(["lesson", "pattern", "client"])
    one = table.loc[("01_async_vs_sync", "sequential", "")]
    assert one["runs"] == 3 and one["valid"] == 2 and one["median ratio"] == pytest.approx(0.955)
    assert table.loc[("06_client_side", "sequential", "threadpool"), "within ±25%"] == 0.0


def test_nothing_on_disk_is_said_plainly_and_nothing_fails(tmp_path):
    empty = load_runs(root=tmp_path)
    assert empty.empty
    assert "No runs on disk" in overview(empty) and "make figures" in overview(empty)
    assert patterns(empty).empty and valid_ratios(empty).empty
    heads = headlines(empty)
    assert len(heads) == len(published.HEADLINES) and heads["ours"].isna().all()
    chart(empty, heads, "nothing yet")


def test_runs_read_from_disk_are_summarised(tmp_path):
    for i, row in enumerate(RUNS.to_dict("records")):
        folder = tmp_path / f"run-{i}"
        folder.mkdir()
        (folder / "manifest.json").write_text(json.dumps({"lesson": row["lesson"], "result": row}))
    runs = load_runs(root=tmp_path)
    assert "7 runs on disk, 6 of them valid" in overview(runs)
    assert len(valid_ratios(runs)) == 6
    chart(runs, headlines(runs), "t")


def test_only_runs_of_a_lesson_are_summarised():
    runs = pd.concat([RUNS, pd.DataFrame([_run(lesson=None, pattern="gather", rps=1.0)])], ignore_index=True)
    assert len(summary.lesson_runs(runs)) == len(RUNS)
    assert set(summary.lesson_runs(runs, ["06"])["lesson"]) == {"06_client_side"}
    assert summary.lesson_runs(pd.DataFrame()).empty


def test_a_run_without_a_prediction_or_a_lesson_does_not_break_the_chart():
    runs = pd.concat([RUNS, pd.DataFrame([_run(pattern="gather"), _run(lesson=None)])], ignore_index=True)
    runs["ratio"] = runs["ratio"].astype(object)
    runs.loc[len(runs) - 2, "ratio"] = None  # as load_runs gives it when a manifest holds null
    chart(runs, headlines(runs), "t")
    assert not patterns(runs).empty


def test_a_headline_can_leave_out_runs_on_a_pinned_server():
    runs = pd.DataFrame([
        _run(lesson="07_database", pattern="async_select", users=1000, rps=900.0, cpus=""),
        _run(lesson="07_database", pattern="sync_select", users=1000, rps=600.0, cpus=None),  # unset, read back as NaN
        _run(lesson="07_database", pattern="async_select", users=1000, rps=1200.0, cpus="1"),
        _run(lesson="07_database", pattern="sync_select", users=1000, rps=1300.0, cpus="1"),
    ])  # fmt: skip
    the_select = next(h for h in published.HEADLINES if h.lesson == "07")
    assert headlines(runs, [the_select]).iloc[0]["ours"] == pytest.approx(900 / 600)


def test_headlines_of_one_article_only():
    heads = headlines(RUNS, article=HORACEG)
    assert set(heads["article"]) == {HORACEG.short}
    assert len(heads) == sum(h.article == HORACEG for h in published.HEADLINES)


def test_the_title_counts_runs_near_the_model_and_headlines_near_the_articles():
    ratios = pd.Series([1.0, 0.8, 1.3, 0.5])  # two within ±25%
    medians = pd.Series([0.9, 1.1, 1.2])
    heads = pd.DataFrame({"ours": [1.0, 2.0, math.nan, 0.7], "ours / published": [1.4, 1.6, math.nan, 0.6]})
    assert summary.title(ratios, medians, heads) == (
        "50% of 4 valid runs land within ±25% of the model, explained after each run "
        "(median of the experiments 1.10);\n"
        "1 of 3 headlines come out within 1.5× of the published ones"
    )
