import json
import math
import subprocess
import sys

import pandas as pd
import pytest

from labserver import __main__ as cli
from labserver.paths import ROOT
from labserver.theory.demand import OneUser
from labserver.yourapp import advice, measure, patterns, resources
from labserver.yourapp.verdict import Priced, Verdict


def test_the_sweep_doubles_the_users_up_to_its_most():
    assert measure.users_steps(1) == [1]
    assert measure.users_steps(8) == [1, 2, 4, 8]
    assert measure.users_steps(50) == [1, 2, 4, 8, 16, 32, 50]
    assert measure.users_steps(64, least=4) == [4, 8, 16, 32, 64]
    assert measure.users_steps(4, least=4) == [4]


def test_a_route_waits_for_what_its_time_alone_does_not_compute():
    one = OneUser(service_ms=51.6, loop_ms=0.5, threads_ms=0.2, pool_ms=0.0, requests=1)
    assert patterns.io_ms(one) == 51
    assert patterns.io_ms(OneUser(service_ms=0.4, loop_ms=0.5, threads_ms=0.0, pool_ms=0.0, requests=1)) == 0
    # a big reply: reading it is the client's CPU, which a run prices as the load generator's, not a wait
    big = OneUser(service_ms=13.3, loop_ms=8.6, threads_ms=0.0, pool_ms=0.0, requests=4, client_ms=3.5)
    assert patterns.io_ms(big) == 1
    assert patterns.stand_in("thread pool") == "threadpool"
    assert patterns.stand_in(None) == "sequential"  # not a Starlette app: read as awaited


def test_the_ceiling_held_to_is_the_lower_of_the_predicted_and_the_measured():
    v = Verdict("GET /a", "a", "event loop", 0, 50.0, 0.5, 0.0, predicted_rps=900.0, bound="users")
    assert v.ceiling() == 900.0
    v.runs = [{"rps": 700.0, "valid": True}, {"rps": 990.0, "valid": False}]
    assert v.ceiling() == 700.0  # the invalid run measured something else


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["main", "FETCH /x"], "one of GET"),
        (["main:app", "GET /x", "--users", "0"], "--users must be between 1"),
        (["main:app", "GET /x", "--threads", "0"], "threads"),
        (["main:app", "GET /x", "--at-least", "GET /y=3"], "not one of the routes"),
        (["main", "GET /x"], "module:attribute"),
    ],
)
def test_bad_input_fails_before_anything_starts(argv, says, capsys, monkeypatch):
    monkeypatch.setattr(measure, "AppServer", None)  # starting one would raise TypeError, not exit 2
    with pytest.raises(SystemExit) as exit:
        cli.main(["measure", *argv])
    assert exit.value.code == 2
    assert says in capsys.readouterr().err


@pytest.mark.slow
def test_the_shipped_example_is_predicted_then_measured(tmp_path):
    """The real command on the shipped example: a `def` route that blocks 50 ms, priced, predicted and swept."""
    cmd = [sys.executable, "-m", "labserver", "measure", "examples.shop:app", "GET /report"]
    cmd += ["--users", "4", "--duration-s", "2", "--json", "--at-least", "GET /report=100000", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 1, done.stderr  # under its --at-least: a CI can stop a change on it
    [verdict] = json.loads(done.stdout)  # stdout holds the verdicts alone
    assert verdict["runs_on"] == "thread pool" and verdict["endpoint"] == "report"
    assert verdict["service_ms"] >= 50  # S holds the 50 ms the thread blocks
    assert [r["users"] for r in verdict["runs"]] == [1, 2, 4][: len(verdict["runs"])]
    assert all(r["predicted_rps"] > 0 and r["run"] for r in verdict["runs"])
    assert "under --at-least 100,000" in done.stderr
    [saved] = tmp_path.glob("measure-*.json")  # the verdicts, saved in --out
    assert json.loads(saved.read_text())["state"] == "complete"


@pytest.mark.slow
def test_a_mix_priced_before_any_load_is_saved_with_the_verdicts(tmp_path):
    cmd = [sys.executable, "-m", "labserver", "measure", "examples.shop:app", "GET /items", "GET /report"]
    cmd += ["--predict-only", "--mix", "GET /items=8,GET /report=2", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "the mix (GET /items 80%, GET /report 20%)" in done.stdout
    [saved] = tmp_path.glob("measure-*.json")
    record = json.loads(saved.read_text())
    assert record["state"] == "complete" and len(record["verdicts"]) == 2
    assert record["mix"] and {"resource", "binds"} <= set(record["mix"][0])
    assert sum(row["binds"] for row in record["mix"]) >= 1  # the bottleneck: the least req/s it allows


@pytest.mark.slow
def test_an_app_that_will_not_import_ends_with_its_log(tmp_path):
    (tmp_path / "broken.py").write_text("raise RuntimeError('the app cannot start')\n")
    cmd = [sys.executable, "-m", "labserver", "measure", "broken:app", "GET /x", "--predict-only"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert "the app cannot start" in done.stderr


@pytest.mark.slow
def test_a_route_that_answers_an_error_is_not_priced():
    cmd = [sys.executable, "-m", "labserver", "measure", "examples.shop:app", "GET /nowhere"]
    done = subprocess.run([*cmd, "--predict-only"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2
    assert "GET /nowhere answered 404" in done.stderr


def _run(bound: str, threads: float, loop: float, cores: float, workers: int = 1) -> dict:
    return {
        "users": 64,
        "bound": bound,
        "threads_busy_mean": threads,
        "loop_busy": loop,
        "server_cores": cores,
        "workers": workers,
    }


def test_the_bound_named_is_checked_against_the_resource_seen_full():
    v = Verdict("GET /r", "r", "thread pool", 0, 51.0, 0.6, 0.1, predicted_rps=780.0, bound="threads")
    v.runs = [_run("threads", 39.8, 0.25, 0.3)]
    assert resources.seen(v.runs[-1], threads=40, cores=2.0) == {resources.Resource.THREADS}
    assert resources.agrees(v, threads=40, cores=2.0)
    v.runs = [_run("users", 39.8, 0.25, 0.3)]  # named the users, yet every thread was borrowed
    assert not resources.agrees(v, threads=40, cores=2.0)
    assert resources.seen(_run("users", 3, 0.2, 0.1), 40, 2.0) == {resources.Resource.USERS}
    assert resources.named("GIL (one core per worker)") is resources.Resource.WORKER
    assert resources.named("event loop") is resources.Resource.LOOP
    assert resources.named("connection pool") is None  # a bound the telemetry of an app of one's own cannot see


def test_each_routes_busiest_run_is_its_last():
    a = Verdict("GET /a", "a", "event loop", 0, 5.0, 5.0, 0.0, predicted_rps=190.0, bound="GIL (one core per worker)")
    a.runs = [_run("users", 0, 0.6, 0.3), _run("GIL (one core per worker)", 0, 0.99, 1.0)]
    [row] = measure.busiest([a], threads=40, cores=2.0).to_dict("records")
    assert row["named"] == "each worker's core" and row["agree"] and row["cores"] == 0.5 and row["worker"] == 1.0


def test_a_def_route_that_computes_fills_its_workers_core_not_its_loop():
    run = _run("GIL (one core per worker)", 1.6, 0.4, 0.98)  # the loop 0.4 of the time, its threads the rest
    assert resources.seen(run, threads=40, cores=2.0) == {resources.Resource.WORKER}
    assert resources.seen({**run, "workers": 2, "server_cores": 1.0}, 40, 2.0) == {resources.Resource.USERS}
    assert patterns.stand_in(patterns.DEPENDENCY) == "threadpool"  # a def dependency holds a thread


def test_the_saturation_chart_draws_a_group_per_route():
    from labserver.charts import yourapp

    # one route's row of `measure.busiest`, as the chart reads it
    columns = ["route", "named", "threads", "loop", "worker", "cores"]
    frame = pd.DataFrame([["GET /a", "the users", 0.0, 0.2, 0.2, 0.1]], columns=columns)
    fig = yourapp.saturation(frame, "title")
    assert len(fig.axes[0].patches) >= 4  # four bars for the one route


def test_an_async_route_whose_priced_requests_took_turns_holds_the_loop():
    held = OneUser(service_ms=50.6, loop_ms=0.3, threads_ms=0.0, pool_ms=0.0, requests=1, busy_ms=101.0)
    awaited = OneUser(service_ms=50.6, loop_ms=0.3, threads_ms=0.0, pool_ms=0.0, requests=1, busy_ms=50.9)
    computes = OneUser(service_ms=5.4, loop_ms=5.2, threads_ms=0.0, pool_ms=0.0, requests=1, busy_ms=10.7)
    assert patterns.holds_loop(held)
    assert not patterns.holds_loop(awaited)
    assert not patterns.holds_loop(computes)  # they took turns for its CPU, not for a wait
    assert patterns.stand_in(patterns.HELD) == "blocking"


def test_a_held_loop_is_in_use_for_each_requests_wait():
    run = {**_run("event loop", 0, 0.02, 0.03), "loop_held": 0.98}
    assert resources.loop_share(run) == 0.98
    assert resources.seen(run, threads=40, cores=2.0) == {resources.Resource.LOOP}


def test_the_advice_is_priced_with_the_same_model(monkeypatch):
    from types import SimpleNamespace

    from labserver.demo.settings import Settings
    from labserver.harness.load import pricing
    from labserver.harness.plans.plan import Stage
    from labserver.theory.workload import Workload

    one = OneUser(service_ms=51.0, loop_ms=0.5, threads_ms=0.1, pool_ms=0.0, requests=1)
    monkeypatch.setattr(pricing, "one_user", lambda stage: one)
    server = SimpleNamespace(settings=Settings(threads=40, procs=0), cores=lambda: 2.0)
    stage = Stage(server, Workload("threadpool", 1, io_ms=50))
    v = Verdict("GET /r", "r", "thread pool", 0, 51.0, 0.5, 0.1, predicted_rps=780.0, bound="threads")
    told = advice.advice(Priced(v, stage), users=64)
    assert "--threads 80" in told.change and 1.5 * 780 < told.rps <= 64 / 0.051  # the users bind it then
    v.runs_on, v.bound = patterns.HELD, "event loop"
    assert "plain `def`" in advice.advice(Priced(v, stage), users=64).change
    v.runs_on, v.bound = "thread pool", "users"
    room = advice.advice(Priced(v, stage), users=32)
    assert "at 64 users" in room.change and "bound by the thread pool" in room.change  # 64 users, 40 threads
    assert room.rps == pytest.approx(40 / 0.0506, rel=0.05)


SHOP = """
import asyncio
import time

from fastapi import Depends, FastAPI

app = FastAPI()


@app.get("/slow")
def slow() -> dict:
    time.sleep(0.02)
    return {"ok": True}


@app.get("/broken")
async def broken() -> dict:
    raise RuntimeError("the shop's own bug")


def settings() -> dict:  # a plain `def` dependency that returns at once: a thread for a moment
    return {"region": "eu"}


def ledger() -> dict:  # ... and one that blocks for the request's wait: a thread for all of it
    time.sleep(0.02)
    return {"balance": 0}


@app.get("/quick")
async def quick(config: dict = Depends(settings)) -> dict:
    await asyncio.sleep(0.02)
    return config


@app.get("/held")
async def held(balance: dict = Depends(ledger)) -> dict:
    return balance
"""


@pytest.mark.slow
def test_an_app_it_has_never_seen_is_measured_from_its_own_folder(tmp_path):
    (tmp_path / "shop.py").write_text(SHOP)  # nothing in it knows the lab
    cmd = [sys.executable, "-m", "labserver", "measure", "shop:app"]
    done = subprocess.run(
        [*cmd, "GET /slow", "--users", "2", "--duration-s", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    [verdict] = json.loads(done.stdout)
    assert verdict["runs_on"] == "thread pool" and verdict["endpoint"] == "slow"
    assert [r["users"] for r in verdict["runs"]][:1] == [1] and verdict["change"]
    deps = subprocess.run(
        [*cmd, "GET /quick", "GET /held", "--predict-only", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert deps.returncode == 0, deps.stderr
    quick, held = json.loads(deps.stdout)
    # a thread taken for a moment binds nothing: read as the event loop's, bound by the users
    assert quick["runs_on"] == "event loop" and quick["def_dependencies"] == 1
    assert quick["thread_hold_ms"] < 0.5 * quick["service_ms"]
    # one held for the request's wait: read as a `def`
    assert held["runs_on"] == patterns.DEPENDENCY and held["thread_hold_ms"] >= 0.5 * held["service_ms"]
    broken = subprocess.run(
        [*cmd, "GET /broken", "--predict-only"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert broken.returncode == 2
    assert "GET /broken answered 500" in broken.stderr and "the shop's own bug" in broken.stderr  # the app's log


HANG = """
import asyncio

from fastapi import FastAPI

app = FastAPI()


@app.get("/never")
async def never() -> dict:
    await asyncio.sleep(3600)
    return {}
"""


@pytest.mark.slow
def test_a_route_that_never_answers_ends_at_the_timeout_with_nothing_left_running(tmp_path):
    (tmp_path / "hang.py").write_text(HANG)
    cmd = [sys.executable, "-m", "labserver", "measure", "hang:app", "GET /never", "--predict-only"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert "GET /never gave no answer within" in done.stderr  # the lab's leftover check ends the session's test


@pytest.mark.slow
def test_ctrl_c_during_the_sweep_stops_it_and_leaves_nothing_running(tmp_path):
    import signal

    from tests.conftest import wait_gone

    cmd = [sys.executable, "-u", "-m", "labserver", "measure", "examples.shop:app", "GET /report", "--users", "8"]
    cmd += ["--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    for line in proc.stdout:  # the sweep has started once it says so, and its first run follows
        if "measuring" in line:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130  # stopped, not finished
    assert not wait_gone(), "a uvicorn or Locust process outlived Ctrl-C"
    [saved] = tmp_path.glob("measure-*.json")  # what was measured so far, marked as stopped early
    record = json.loads(saved.read_text())
    assert record["state"] == "interrupted (Ctrl-C)" and record["verdicts"][0]["route"] == "GET /report"


def test_each_route_is_priced_again_a_round_of_routes_later(monkeypatch):
    from types import SimpleNamespace

    from labserver.harness.load import measurement, pricing

    order: list[tuple[str, str]] = []
    one = OneUser(service_ms=6.0, loop_ms=5.5, threads_ms=0.0, pool_ms=0.0, requests=3)

    def priced(kind):
        return lambda stage, *_, **__: order.append((kind, stage.route["label"])) or one

    monkeypatch.setattr(measurement, "measure", priced("left out"))
    monkeypatch.setattr(pricing, "one_user", priced("first"))
    monkeypatch.setattr(pricing, "again", priced("again"))
    monkeypatch.setattr(pricing, "price_generator", lambda stage, again=False: priced(("generator", again))(stage))
    monkeypatch.setattr(measure, "predict", lambda stage, users: (100.0, "users"))
    monkeypatch.setattr(measure, "advice", lambda each, users: advice.Advice("none", math.nan))
    server = SimpleNamespace(endpoint=lambda route: {"found": True, "runs_on": "event loop"})
    routes = [{"label": "GET /a"}, {"label": "GET /b"}]
    measure.predict_all(server, routes, users=8, duration_s=1)
    seconds = [i for i, (kind, _) in enumerate(order) if kind == "again"]
    firsts = [i for i, (kind, _) in enumerate(order) if kind == "first"]
    assert max(firsts) < min(seconds)  # every route's first round before any route's second
    assert [label for kind, label in order if kind == "again"] == ["GET /a", "GET /a", "GET /b", "GET /b"]
    # the load generator's price on each route (where its replies are big) in both rounds too
    generator = [(i, kind[1], label) for i, (kind, label) in enumerate(order) if kind[0] == "generator"]
    assert [(again, label) for _, again, label in generator] == [
        (False, "GET /a"), (False, "GET /b"), (True, "GET /a"), (True, "GET /b")
    ]  # fmt: skip
    assert all(i < min(seconds) for i, again, _ in generator if not again)


def test_a_mix_is_priced_by_the_operational_laws(monkeypatch):
    from types import SimpleNamespace

    from labserver.demo.settings import Settings
    from labserver.harness.load import pricing

    prices = {
        "report": OneUser(service_ms=51.0, loop_ms=0.5, threads_ms=0.2, pool_ms=0.0, requests=3),
        "catalog": OneUser(service_ms=6.0, loop_ms=5.5, threads_ms=0.0, pool_ms=0.0, requests=3),
    }
    monkeypatch.setattr(pricing, "one_user", lambda stage, tries=1: prices[stage.name])
    server = SimpleNamespace(settings=Settings(threads=40, procs=0), cores=lambda: 2.0)
    report = Verdict("GET /report", "report", "thread pool", 0, 51.0, 0.5, 0.2, math.nan, "")
    catalog = Verdict("GET /catalog", "catalog", "event loop", 0, 6.0, 5.5, 0.0, math.nan, "")
    priced = [
        Priced(report, SimpleNamespace(server=server, name="report")),
        Priced(catalog, SimpleNamespace(server=server, name="catalog")),
    ]
    table = resources.mix(priced, {"GET /report": 0.8, "GET /catalog": 0.2}, users=64).set_index("resource")
    worker = 1 / (0.8 * 0.0007 + 0.2 * 0.0055)  # one core, and each request's CPU on it: about 602 req/s
    assert table.loc["each worker's core", "most req/s"] == pytest.approx(worker)
    assert table.loc["the thread pool", "most req/s"] == pytest.approx(40 / (0.8 * 0.051))
    assert table.loc["the users", "most req/s"] == pytest.approx(64 / (0.8 * 0.051 + 0.2 * 0.006))
    assert list(table.index[table["binds"]]) == ["each worker's core"]  # the largest demand for its capacity
    assert table.filter(like="U at").loc["each worker's core"].iloc[0] == pytest.approx(1.0)


def test_a_mix_names_routes_measured_and_sums_to_one():
    from labserver.yourapp import routes

    assert routes.mix("GET /a=3, GET /b=1", ["GET /a", "GET /b"]) == {"GET /a": 0.75, "GET /b": 0.25}
    assert routes.mix(None, ["GET /a"]) == {}
    with pytest.raises(ValueError, match="not one of the routes"):
        routes.mix("GET /c=1", ["GET /a"])


def test_the_throughput_chart_draws_each_route_on_log_axes():
    import pandas as pd

    from labserver.charts import yourapp

    runs = pd.DataFrame(
        {"route": ["GET /a", "GET /a", "GET /b"], "users": [1, 2, 1], "rps": [20.0, 40.0, 1200.0]}
        | {"predicted_before_rps": [19.0, 39.0, 1100.0], "valid": [True, True, True]}
    )
    ax = yourapp.throughput(runs, "title").axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    low, high = ax.get_ylim()
    assert low < 20 and high > 1200  # every route in view, the slowest included
    assert len(ax.get_lines()) == 4  # measured and predicted, a route each


def test_each_verdict_names_the_decision_card_row_its_route_falls_under():
    from labserver.theory.bottlenecks import Bottleneck

    row = measure.card_row
    assert row("event loop", Bottleneck.USERS) == measure.CARD["awaited"]
    assert row("thread pool", Bottleneck.THREADS) == measure.CARD["blocking"]
    assert row(patterns.DEPENDENCY, Bottleneck.THREADS) == measure.CARD[patterns.DEPENDENCY]
    assert row(patterns.HELD, Bottleneck.EVENT_LOOP) == measure.CARD[patterns.HELD]
    # bound by a CPU, wherever it runs: it computes (20,000 items serialised on the loop, fib in a thread)
    assert row("event loop", Bottleneck.EVENT_LOOP) == row("thread pool", Bottleneck.GIL) == measure.CARD["computes"]
    assert row("thread pool", Bottleneck.CORES) == measure.CARD["computes"]


def test_the_law_beside_the_model_claims_nothing_full_for_the_users_and_no_peak_past_the_sweep():
    v = Verdict("GET /a", "a", "event loop", 0, 50.0, 0.2, 0.0, predicted_rps=1250.0, bound="users")
    users = [1, 2, 4, 8, 16, 32, 64]
    v.runs = [  # a users-bound sweep, a shade under linear: its fitted peak lies far past 64 users
        {**_run("users", 0, 0.2, 0.2), "users": n, "rps": 19.6 * n * (1 - 0.0005 * n), "predicted_rps": 19.5 * n,
         "valid": True}
        for n in users
    ]  # fmt: skip
    [row] = measure.scalability([v], threads=40, cores=2.0).to_dict("records")
    assert v.law().peak_users > 64
    assert math.isnan(row["peak users N*"]) and math.isnan(row["the law's most (req/s)"])
    assert row["the data support"] == "the model: the users, nothing full"
