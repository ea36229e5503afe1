import json
import math

import pandas as pd
import pytest

from labserver.course.claims import ClaimFailed, Claims


@pytest.fixture(autouse=True)
def no_claims_file(monkeypatch):
    monkeypatch.delenv("LAB_CLAIMS_FILE", raising=False)


@pytest.mark.parametrize(
    ("value", "low", "high", "passed"),
    [
        (2.5, 2.0, math.inf, True),
        (1.9, 2.0, math.inf, False),
        (0.5, -math.inf, 0.5, True),
        (0.51, -math.inf, 0.5, False),
        (1.0, 0.9, 1.1, True),
        (1.2, 0.9, 1.1, False),
    ],
)
def test_between(value, low, high, passed):
    v = Claims("t").between("claim", value, low, high, key="claim")
    assert v.passed is passed
    assert str(v).startswith("[PASS]" if passed else "[FAIL]")


def test_bounds_are_written_for_a_reader():
    c = Claims("t")
    assert c.between("a", 3, low=2, key="a").bound == "≥ 2"
    assert c.between("b", 3, high=4, key="b").bound == "≤ 4"
    assert c.between("c", 3, 2, 4, key="c").bound == "between 2 and 4"


def test_ratio_and_near():
    c = Claims("t")
    assert c.ratio("async / sync", 800, 400, at_least=2, key="async-2x").passed
    assert not c.ratio("async / sync", 700, 400, at_least=2, key="async-2x-not").passed
    assert c.ratio("tie", 400, 400, at_least=0.9, at_most=1.1, key="tie").detail == "400 / 400"
    assert c.near("vs model", 392, 400, tolerance=0.05, key="near").passed
    assert not c.near("vs model", 350, 400, tolerance=0.05, key="far").passed
    assert c.near("vs model", 392, 400, tolerance=0.05, key="near-value").measured == pytest.approx(0.98)


@pytest.mark.parametrize(
    "check",
    [
        lambda c: c.between("nan", math.nan, key="k"),
        lambda c: c.between("nan with bounds", math.nan, 0, 10, key="k"),
        lambda c: c.ratio("zero denominator", 5, 0, at_least=0, key="k"),
        lambda c: c.ratio("nan numerator", math.nan, 5, at_least=0, key="k"),
        lambda c: c.near("nan", math.nan, 1, tolerance=10, key="k"),
    ],
)
def test_nan_never_passes(check):
    assert not check(Claims("t")).passed


def test_valid_claim_names_the_bad_runs():
    frame = pd.DataFrame(
        {"pattern": ["gather", "threadpool"], "users": [10, 80], "valid": [True, False], "problems": ["", "3 failed"]}
    )
    v = Claims("t").valid("every run valid", frame, key="runs-valid")
    assert not v.passed
    assert v.measured == pytest.approx(0.5)
    assert "threadpool at 80 users: 3 failed" in v.detail
    assert Claims("t").valid("ok", frame[frame.valid], key="runs-valid").passed
    assert not Claims("t").valid("nothing measured", frame.iloc[0:0], key="runs-valid").passed


def test_valid_claim_says_how_many_valid_runs_were_disturbed():
    frame = pd.DataFrame({"pattern": ["a", "b"], "users": [1, 1], "valid": [True, True], "problems": ["", ""],
                          "disturbed": [True, False]})  # fmt: skip
    v = Claims("t").valid("every run valid", frame, key="runs-valid")
    assert v.passed and "1 of them disturbed by other programs" in v.detail
    quiet = Claims("t").valid("every run valid", frame.assign(disturbed=False), key="runs-valid")
    assert quiet.detail == "all runs valid"


def test_verdicts_are_printed(capsys):
    Claims("t").between("gather beats sequential", 2.9, low=2.5, key="gather-beats-sequential")
    assert "[PASS] gather beats sequential: measured 2.9, expected ≥ 2.5" in capsys.readouterr().out


def test_report_is_a_table():
    c = Claims("lesson")
    c.between("one", 1, 0, 2, key="one")
    c.between("two", 3, 0, 2, key="two")
    table = c.report()
    assert list(table["claim"]) == ["one", "two"]
    assert list(table["key"]) == ["one", "two"]
    assert list(table["passed"]) == [True, False]
    assert [v.claim for v in c.failed] == ["two"]


def test_strict_report_raises_naming_the_failed_claims():
    c = Claims("lesson", strict=True)
    c.between("one", 1, 0, 2, key="one")
    c.between("two", 3, 0, 2, key="two")
    with pytest.raises(ClaimFailed, match="1 of 2 claims failed in lesson: two"):
        c.report()


def test_strict_report_passes_when_every_claim_holds():
    c = Claims("lesson", strict=True)
    c.between("one", 1, 0, 2, key="one")
    assert len(c.report()) == 1


def test_claims_file_gets_one_json_line_per_verdict(tmp_path, monkeypatch):
    path = tmp_path / "claims.jsonl"
    monkeypatch.setenv("LAB_CLAIMS_FILE", str(path))
    c = Claims("lesson")
    c.between("one", 1, 0, 2, key="claim-1")
    c.ratio("two", 1, 4, at_least=1, key="claim-2")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(d["key"], d["claim"], d["passed"]) for d in lines] == [("claim-1", "one", True), ("claim-2", "two", False)]
    assert {d["lesson"] for d in lines} == {"lesson"}
    assert lines[1]["measured"] == pytest.approx(0.25)
    assert set(lines[0]) == {
        "lesson",
        "key",
        "claim",
        "measured",
        "bound",
        "passed",
        "detail",
        "low",
        "high",
        "skipped",
    }
    assert (lines[0]["low"], lines[0]["high"], lines[1]["high"]) == (0, 2, None)


@pytest.mark.parametrize(
    ("low", "high", "margin"), [(0, 2, 0.5), (1.4, None, 0.1), (None, 1.2, -0.3), (None, None, math.inf)]
)
def test_margin_is_the_distance_to_the_nearest_bound(low, high, margin):
    low, high = (low if low is not None else -math.inf), (high if high is not None else math.inf)
    v = Claims("t").between("x", 1.5, low, high, key="x")
    assert v.margin == pytest.approx(margin)


def test_a_claim_that_needs_more_cpus_is_stated_not_failed(monkeypatch, capsys):
    from labserver.course import claims as claims_module

    monkeypatch.setattr(claims_module.cpus, "cores", lambda: 1.0)
    c = Claims("lesson", strict=True)
    assert not c.needs_cpus(2, "pool beats one core", "one CPU: nothing to run in parallel", key="pool-beats-one-core")
    assert "[SKIP] pool beats one core: needs 2 usable CPUs, this process may use 1" in capsys.readouterr().out
    assert c.failed == [] and c.verdicts[0].skipped and c.verdicts[0].key == "pool-beats-one-core"
    c.report()  # strict, and nothing failed


def test_with_enough_cpus_the_claim_is_checked(monkeypatch):
    from labserver.course import claims as claims_module

    monkeypatch.setattr(claims_module.cpus, "cores", lambda: 2.0)
    c = Claims("lesson")
    assert c.needs_cpus(2, "pool beats one core", "why", key="pool-beats-one-core")
    assert c.verdicts == []
    c.between("pool beats one core", 1.8, low=1.5, key="pool-beats-one-core")  # the guarded check: the guard's key
    assert [v.key for v in c.verdicts] == ["pool-beats-one-core"]


CHECKS = {
    "between": lambda c, **key: c.between("claim", 1.0, 0, 2, **key),
    "ratio": lambda c, **key: c.ratio("claim", 1.0, 1.0, at_least=0.5, **key),
    "near": lambda c, **key: c.near("claim", 1.0, 1.0, 0.1, **key),
    "valid": lambda c, **key: c.valid("claim", pd.DataFrame({"valid": [True]}), **key),
    "cannot_show": lambda c, **key: c.cannot_show("claim", "why", **key),
    "needs_cpus": lambda c, **key: c.needs_cpus(10_000, "claim", "why", **key),
}


@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
def test_every_check_needs_a_key(check):
    with pytest.raises(TypeError, match="key"):
        check(Claims("t"))


@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
def test_every_check_records_its_key(check):
    c = Claims("t")
    check(c, key="the-claim-2")
    assert [v.key for v in c.verdicts] == ["the-claim-2"]


@pytest.mark.parametrize(
    "key", ["Gather-3x", "gather 3x", "gather_3x", "", "-gather", "gather-", "gather--3x", "ρ-low"]
)
@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
def test_a_key_that_is_not_an_id_is_refused_at_the_check(check, key, capsys):
    c = Claims("t")
    with pytest.raises(ValueError, match=f"claim key {key!r} in t is not an id: lowercase letters, digits and hyphens"):
        check(c, key=key)
    assert c.verdicts == [] and capsys.readouterr().out == ""  # refused before any verdict is printed


def test_a_key_that_is_not_text_is_refused():
    with pytest.raises(ValueError, match="claim key None in t is not an id"):
        Claims("t").between("claim", 1.0, 0, 2, key=None)


@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
def test_a_key_used_twice_in_a_lesson_is_refused_at_the_second_check(check, tmp_path, monkeypatch):
    path = tmp_path / "claims.jsonl"
    monkeypatch.setenv("LAB_CLAIMS_FILE", str(path))
    c = Claims("01_async_vs_sync")
    c.between("async beats sync", 3.1, low=2, key="async-beats-sync")
    with pytest.raises(ValueError, match="claim key 'async-beats-sync' is used twice in 01_async_vs_sync, "
                       "first for 'async beats sync'"):  # fmt: skip
        check(c, key="async-beats-sync")
    assert len(c.verdicts) == 1 and len(path.read_text().splitlines()) == 1


def test_the_same_claim_checked_again_replaces_its_verdict():
    # an instructor re-runs the claims cell alone: the claims keep one verdict each, the latest
    c = Claims("01_async_vs_sync")
    c.between("async beats sync", 1.5, low=2, key="async-beats-sync")
    c.between("async beats sync", 3.1, low=2, key="async-beats-sync")
    assert [(v.key, v.measured, v.passed) for v in c.verdicts] == [("async-beats-sync", 3.1, True)]
    assert c.failed == []


def test_the_same_key_in_another_lesson_is_saved_as_another_claim(tmp_path, monkeypatch):
    # the batch's file of verdicts: the repeat table tells claims apart by lesson and key (batch.robustness)
    saved = tmp_path / "claims.jsonl"
    monkeypatch.setenv("LAB_CLAIMS_FILE", str(saved))
    Claims("01_async_vs_sync").between("runs valid", 1.0, low=1, key="runs-valid")
    Claims("02_sequential_vs_gather").between("runs valid", 0.5, low=1, key="runs-valid")
    lines = [json.loads(line) for line in saved.read_text().splitlines()]
    assert [(v["lesson"], v["key"], v["passed"]) for v in lines] == [
        ("01_async_vs_sync", "runs-valid", True),
        ("02_sequential_vs_gather", "runs-valid", False),
    ]


def test_a_guard_refuses_a_bad_key_even_where_it_records_nothing(monkeypatch):
    from labserver.course import claims as claims_module

    monkeypatch.setattr(claims_module.cpus, "cores", lambda: 2.0)
    with pytest.raises(ValueError, match="not an id"):
        Claims("t").needs_cpus(2, "pool beats one core", "why", key="Pool beats one core")
