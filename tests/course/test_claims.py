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
    v = Claims("t").between("claim", value, low, high)
    assert v.passed is passed
    assert str(v).startswith("[PASS]" if passed else "[FAIL]")


def test_bounds_are_written_for_a_reader():
    c = Claims("t")
    assert c.between("a", 3, low=2).bound == "≥ 2"
    assert c.between("b", 3, high=4).bound == "≤ 4"
    assert c.between("c", 3, 2, 4).bound == "between 2 and 4"


def test_ratio_and_near():
    c = Claims("t")
    assert c.ratio("async / sync", 800, 400, at_least=2).passed
    assert not c.ratio("async / sync", 700, 400, at_least=2).passed
    assert c.ratio("tie", 400, 400, at_least=0.9, at_most=1.1).detail == "400 / 400"
    assert c.near("vs model", 392, 400, tolerance=0.05).passed
    assert not c.near("vs model", 350, 400, tolerance=0.05).passed
    assert c.near("vs model", 392, 400, tolerance=0.05).measured == pytest.approx(0.98)


@pytest.mark.parametrize(
    "check",
    [
        lambda c: c.between("nan", math.nan),
        lambda c: c.between("nan with bounds", math.nan, 0, 10),
        lambda c: c.ratio("zero denominator", 5, 0, at_least=0),
        lambda c: c.ratio("nan numerator", math.nan, 5, at_least=0),
        lambda c: c.near("nan", math.nan, 1, tolerance=10),
    ],
)
def test_nan_never_passes(check):
    assert not check(Claims("t")).passed


def test_valid_claim_names_the_bad_runs():
    frame = pd.DataFrame(
        {"pattern": ["gather", "threadpool"], "users": [10, 80], "valid": [True, False], "problems": ["", "3 failed"]}
    )
    v = Claims("t").valid("every run valid", frame)
    assert not v.passed
    assert v.measured == pytest.approx(0.5)
    assert "threadpool at 80 users: 3 failed" in v.detail
    assert Claims("t").valid("ok", frame[frame.valid]).passed
    assert not Claims("t").valid("nothing measured", frame.iloc[0:0]).passed


def test_verdicts_are_printed(capsys):
    Claims("t").between("gather beats sequential", 2.9, low=2.5)
    assert "[PASS] gather beats sequential: measured 2.9, expected ≥ 2.5" in capsys.readouterr().out


def test_report_is_a_table():
    c = Claims("lesson")
    c.between("one", 1, 0, 2)
    c.between("two", 3, 0, 2)
    table = c.report()
    assert list(table["claim"]) == ["one", "two"]
    assert list(table["passed"]) == [True, False]
    assert [v.claim for v in c.failed] == ["two"]


def test_strict_report_raises_naming_the_failed_claims():
    c = Claims("lesson", strict=True)
    c.between("one", 1, 0, 2)
    c.between("two", 3, 0, 2)
    with pytest.raises(ClaimFailed, match="1 of 2 claims failed in lesson: two"):
        c.report()


def test_strict_report_passes_when_every_claim_holds():
    c = Claims("lesson", strict=True)
    c.between("one", 1, 0, 2)
    assert len(c.report()) == 1


def test_claims_file_gets_one_json_line_per_verdict(tmp_path, monkeypatch):
    path = tmp_path / "claims.jsonl"
    monkeypatch.setenv("LAB_CLAIMS_FILE", str(path))
    c = Claims("lesson")
    c.between("one", 1, 0, 2)
    c.ratio("two", 1, 4, at_least=1)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(d["claim"], d["passed"]) for d in lines] == [("one", True), ("two", False)]
    assert {d["lesson"] for d in lines} == {"lesson"}
    assert lines[1]["measured"] == pytest.approx(0.25)
    assert set(lines[0]) == {"lesson", "claim", "measured", "bound", "passed", "detail", "low", "high", "skipped"}
    assert (lines[0]["low"], lines[0]["high"], lines[1]["high"]) == (0, 2, None)


@pytest.mark.parametrize(
    ("low", "high", "margin"), [(0, 2, 0.5), (1.4, None, 0.1), (None, 1.2, -0.3), (None, None, math.inf)]
)
def test_margin_is_the_distance_to_the_nearest_bound(low, high, margin):
    v = Claims("t").between("x", 1.5, low if low is not None else -math.inf, high if high is not None else math.inf)
    assert v.margin == pytest.approx(margin)


def test_a_claim_that_needs_more_cpus_is_stated_not_failed(monkeypatch, capsys):
    from labserver.course import claims as claims_module

    monkeypatch.setattr(claims_module.cpus, "cores", lambda: 1.0)
    c = Claims("lesson", strict=True)
    assert not c.needs_cpus(2, "pool beats one core", "one CPU: nothing to run in parallel")
    assert "[SKIP] pool beats one core: needs 2 usable CPUs, this process may use 1" in capsys.readouterr().out
    assert c.failed == [] and c.verdicts[0].skipped
    c.report()  # strict, and nothing failed


def test_with_enough_cpus_the_claim_is_checked(monkeypatch):
    from labserver.course import claims as claims_module

    monkeypatch.setattr(claims_module.cpus, "cores", lambda: 2.0)
    c = Claims("lesson")
    assert c.needs_cpus(2, "pool beats one core", "why")
    assert c.verdicts == []
