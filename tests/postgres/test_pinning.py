"""Lesson 07's pinned-core study without a database: the second server, its runs and rounds, and what
they show, from hand-made lone-request figures (`base`) and frames as run_parts gives them."""

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from labserver.demo.settings import Settings
from labserver.harness.plans.plan import Foreseen
from labserver.postgres import pinning, runs


@pytest.fixture
def fib_ms(monkeypatch):
    """fib(n) priced at n ms: the plans no longer depend on this machine's speed."""
    monkeypatch.setattr(runs, "cpu_ms", lambda n: float(n))


def base():
    """Lone-request figures as `calibrate` gives them (ms)."""
    return pd.DataFrame(
        {"service_ms": [2.0, 2000.0], "cpu_ms": [1.0, 1.0]},
        index=pd.Index(["sync_select", "async_select"], name="pattern"),
    )


def server():
    return SimpleNamespace(settings=Settings(workers=1, threads=4, db_pool=2, procs=0))


def test_without_a_core_to_pin_to_there_is_one_server():
    anywhere = server()
    assert pinning.servers(anywhere, [], "postgresql://x", db=None) == [anywhere]


def test_the_pinned_server_has_the_first_one_s_settings_and_keeps_the_database_off_its_core(monkeypatch):
    made = []
    monkeypatch.setattr(pinning.database, "lab_server", lambda url, **kw: made.append((url, kw)) or "pinned")
    anywhere, db = server(), object()
    assert pinning.servers(anywhere, [1], "postgresql://x", db) == [anywhere, "pinned"]
    assert made == [("postgresql://x", {"threads": 4, "db_pool": 2, "procs": 0, "cpus": [1], "database": db})]


def test_parts_pin_part_2_then_add_the_rounds_in_mirrored_order(fib_ms):
    anywhere, pinned = server(), server()
    assert pinning.parts([anywhere], base(), 3, 8) == {}
    parts = pinning.parts([anywhere, pinned], base(), 3, 8, duration_s=3)
    assert list(parts) == ["pinned", "round 1, pinned", "round 1, any", "round 2, any", "round 2, pinned"]
    assert [r["pattern"] for r in parts["pinned"]] == ["async_select", "sync_select"]  # part 2's order, mirrored
    assert all(r["server"] is pinned for r in parts["pinned"] + parts["round 2, pinned"])
    assert parts["round 1, any"][0]["server"] is anywhere
    assert list(pinning.parts([anywhere, pinned], base(), 1, 8)) == ["pinned"]  # one round: part 2's own


def test_the_pinned_server_s_runs_are_priced_on_it_and_the_other_s_by_the_predict_table(fib_ms):
    parts = pinning.parts([server(), server()], base(), 3, 8, duration_s=3)
    foreseen = {name: [isinstance(r["predicted"], Foreseen) for r in each] for name, each in parts.items()}
    # the Predict table priced the server on any core (base); the pinned one is priced just before its runs
    assert foreseen == {"pinned": [False, False], "round 1, pinned": [False], "round 1, any": [True],
                        "round 2, any": [True], "round 2, pinned": [False]}  # fmt: skip


def _select(sync_ms, async_ms=0.3, cores=1.0):
    """One part's runs as run_parts gives them: the sync and the async SELECT."""
    return pd.DataFrame(
        {"pattern": ["sync_select", "async_select"], "driver": ["sync", "async"], "rps": [1000.0, 1500.0],
         "server_ms": [sync_ms, async_ms], "server_cpu": [cores, 1.0], "ratio": [1.1, 1.0]}
    )  # fmt: skip


def test_the_study_sets_the_rounds_side_by_side_and_takes_their_median():
    frames = {"fast": _select(1.0), "pinned": _select(0.5), "round 1, any": _select(0.8),
              "round 1, pinned": _select(0.6)}  # fmt: skip
    study = pinning.study(frames, 2, [3])
    assert study.ratios == pytest.approx([0.5, 0.75])
    assert study.median == pytest.approx(0.625)
    assert study.detail == "pinned to CPU 3; median of 2 rounds: 0.50, 0.75"
    assert list(study.servers.index) == ["any core, round 1", "pinned to CPU 3, round 1"]
    assert study.flips == pytest.approx([1.5, 1.5])  # async's one pinned run over each round's sync run
    assert study.async_over_sync == pytest.approx(1.5)
    assert study.medians.loc["pinned", "CPU ms per request"] == pytest.approx(0.55)
    servers, medians = study.tables()
    assert servers.at["pinned to CPU 3, round 1", "sync CPU ms per request"] == 0.5
    assert list(medians.index) == ["any core, median of 2 rounds", "pinned, median of 2 rounds"]
    text = str(study)
    assert text.startswith("sync's CPU per request pinned / on any core, round by round: 0.50, 0.75\nmedian: 0.62")
    assert "async / sync req/s in the first round, its two runs back to back: 1.50; async's one run against" in text
    assert study.where_cpu_went.startswith("The sync worker on any core")  # gil.spread's sentence


def test_async_over_sync_pinned_is_read_in_the_round_both_ran_in():
    sync_rps = {"pinned": 1000.0, "round 1, pinned": 1500.0, "round 2, pinned": 1600.0}
    frames = {"fast": _select(1.0), "round 1, any": _select(0.8), "round 2, any": _select(0.8)}
    for part, rps in sync_rps.items():
        frames[part] = _select(0.5).assign(rps=[rps, 1200.0])  # async's 1200 counts only in "pinned", part 2
    study = pinning.study(frames, 3, [1])
    assert study.flips == pytest.approx([1.2, 0.8, 0.75])
    assert study.async_over_sync == pytest.approx(1.2)  # round 1: the later sync runs met other speeds
    assert "against each later round's sync run: 0.80, 0.75" in str(study)
    # on any core too: async's one run (1500 in "fast") against each round's sync run there
    frames["round 1, any"] = _select(0.8).assign(rps=[1250.0, 9999.0])  # async's 9999 here is never read
    study = pinning.study(frames, 3, [1])
    assert study.anywhere == pytest.approx([1.5, 1.2, 1.5])
    assert (
        "on any core, async / sync req/s in the first round: 1.50, then against each later round's sync run: "
        "1.20, 1.50" in str(study)
    )


@pytest.mark.parametrize(
    ("anywhere", "pinned", "said"),
    [(1.5, 0.8, "turned the order"), (1.5, 1.04, "closed the gap"), (1.5, 1.2, "narrowed the gap"),
     (1.2, 1.5, "widened the gap"), (0.9, 1.1, "turned the order")],
)  # fmt: skip
def test_the_study_says_what_one_core_did_to_the_order_in_the_round_both_ran(anywhere, pinned, said):
    study = pinning.Study(1, pd.DataFrame(), [0.6], pd.DataFrame(), flips=[pinned, 0.7], anywhere=[anywhere, 2.0])
    assert study.order == f"one core {said}: async / sync {anywhere:.2f} on any core (part 2), {pinned:.2f} pinned"
    assert study.order in str(study)
    assert pinning.Study(None, pd.DataFrame(), [], pd.DataFrame()).order == ""


def test_without_a_pinned_server_the_study_says_so_and_shows_no_table():
    study = pinning.study({"fast": _select(1.0)}, 3, [])
    assert study.tables() == [] and math.isnan(study.median) and math.isnan(study.async_over_sync)
    assert str(study) == "This OS cannot pin a process to a core: the pinned runs were skipped."


def test_by_server_sets_the_same_runs_on_two_servers_side_by_side():
    any_core = pd.DataFrame({"driver": ["sync", "async"], "rps": [1000.0, 1500.0], "server_ms": [0.9, 0.6]})
    pinned = pd.DataFrame({"driver": ["async", "sync"], "rps": [1600.0, 1250.0], "server_ms": [0.55, 0.72]})
    table = pinning.by_server({"any core": any_core, "pinned to CPU 1": pinned})
    assert list(table.index) == ["any core", "pinned to CPU 1"]
    assert list(table.columns) == [
        "sync req/s",
        "async req/s",
        "async / sync",
        "sync CPU ms per request",
        "async CPU ms per request",
    ]
    assert table.loc["pinned to CPU 1"].tolist() == pytest.approx([1250.0, 1600.0, 1.28, 0.72, 0.55])
    assert table.at["any core", "async / sync"] == pytest.approx(1.5)


def test_pinned_ratios_pair_each_rounds_sync_runs_pinned_over_any_core():
    def part(sync_ms, async_ms=None):
        rows = [{"pattern": "sync_select", "server_ms": sync_ms}]
        return pd.DataFrame(rows + ([{"pattern": "async_select", "server_ms": async_ms}] if async_ms else []))

    frames = {
        "fast": part(1.0, 0.5),  # part 2: sync then async
        "pinned": pd.concat([part(0.2), part(0.6)]).assign(pattern=["async_select", "sync_select"]),
        "round 1, any": part(0.8),
        "round 1, pinned": part(0.4),
        "round 2, pinned": part(0.45),
        "round 2, any": part(0.9),
    }
    assert pinning.pinned_ratios(frames, 3) == pytest.approx([0.6, 0.5, 0.5])
    assert pinning.pinned_ratios(frames, 1) == pytest.approx([0.6])


def test_rounds_take_turns_between_the_two_servers_in_mirrored_order(fib_ms):
    anywhere, pinned = server(), server()
    parts = pinning.rounds(anywhere, pinned, base(), 2, 8, duration_s=3)
    # part 2's own pair ran any core first: the rounds after it start pinned
    assert list(parts) == ["round 1, pinned", "round 1, any", "round 2, any", "round 2, pinned"]
    assert all(p[0]["pattern"] == "sync_select" and p[0]["users"] == 8 for p in parts.values())
    assert parts["round 2, pinned"][0]["server"] is pinned and parts["round 2, any"][0]["server"] is anywhere


def test_sync_rounds_set_each_rounds_sync_runs_side_by_side():
    def part(ms, cores, kernel, switches, loop, waited, ratio):
        row = dict(server_ms=ms, server_cpu=cores, worker_kernel=kernel, worker_switches=switches, ratio=ratio)
        row.update(worker_loop=loop, worker_waited=waited)
        return pd.DataFrame([{"pattern": "async_select", "server_ms": 0.3}, {"pattern": "sync_select", **row}])

    frames = {
        "fast": part(0.64, 1.1, 0.49, 54.0, 0.39, 0.19, 1.1),
        "pinned": part(0.35, 0.97, 0.28, 10.0, 0.3, 0.6, 0.97),
        "round 1, any": part(0.66, 1.12, 0.5, 55.0, 0.4, 0.18, 1.12),
        "round 1, pinned": part(0.36, 0.98, 0.29, 11.0, 0.31, 0.62, 0.98),
    }
    table = pinning.sync_rounds(frames, 2)
    assert table[["round", "server"]].values.tolist() == [
        [1, "any core"],
        [1, "pinned"],
        [2, "any core"],
        [2, "pinned"],
    ]
    assert table["switches per request"].tolist() == [54.0, 10.0, 55.0, 11.0]
    assert table.loc[3].drop(["round", "server"]).tolist() == pytest.approx([0.98, 0.36, 0.29, 11.0, 0.31, 0.62, 0.98])


def test_sync_rounds_without_the_counters_say_nan():
    row = dict(pattern="sync_select", server_ms=0.5, server_cpu=1.0, ratio=1.0)
    frames = {"fast": pd.DataFrame([row]), "pinned": pd.DataFrame([row])}
    table = pinning.sync_rounds(frames, 1)
    counted = ["in the kernel", "switches per request", "loop ran", "loop waited for a CPU"]
    assert table[counted].isna().all().all()
