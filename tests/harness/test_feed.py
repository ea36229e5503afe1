"""A plan as it runs: the records Locust streams, read incrementally into snapshots, handed on about once a second."""

import math
import subprocess
import sys
import types
from dataclasses import replace

import numpy as np
import pytest

from labserver import protocol
from labserver.demo.settings import Settings
from labserver.harness.load import checks, generator
from labserver.harness.plans import feed, notebook
from labserver.harness.plans.plan import Meters, Options, Stage
from labserver.harness.processes.supervise import Watched
from labserver.paths import LOCUSTFILES
from labserver.theory import model
from labserver.theory.demand import Demand
from labserver.theory.workload import Workload

T0 = 1_000.0
GATHER = Workload("gather", 10)


class FakeServer:
    url = "http://127.0.0.1:1"
    alive = True


def stages(*durations: int) -> list[Stage]:
    return [Stage(FakeServer(), Workload("gather", 10 * (i + 1), duration_s=d)) for i, d in enumerate(durations)]


def guesses(n: int) -> list[model.Prediction]:
    return [model.Prediction(100.0, 50.0, "users")] * n


def write(path, data: bytes | str) -> None:
    with open(path, "ab" if isinstance(data, bytes) else "a") as f:
        f.write(data)


def streamed(*requests, t0: float | None = T0) -> bytes:
    """A live file's bytes as Locust writes them: its head (if `t0`), then (end, ms, stage) requests, all ok."""
    head = protocol.live_head(t0) if t0 is not None else b""
    return head + protocol.live_records([protocol.record(end, ms, True, 42, stage) for end, ms, stage in requests])


def records(*requests, t0: float | None = T0) -> np.ndarray:
    """What a Tail hands on of such a file."""
    return np.frombuffer(streamed(*requests, t0=t0), feed.LIVE_RECORD)


def test_the_harness_reads_the_records_the_protocol_declares():
    assert feed.LIVE_RECORD.itemsize == protocol.LIVE_RECORD.size
    assert feed.LIVE_RECORD.names == tuple(name for name, _ in protocol.LIVE_FIELDS)
    head, request = records((T0 + 1.5, 10.25, 3))
    assert (head["end"], head["stage"]) == (T0, protocol.LIVE_HEAD)
    assert (request["end"], request["ms"], request["ok"], request["stage"]) == (T0 + 1.5, 10.25, True, 3)


def test_tail_reads_only_new_whole_records(tmp_path):
    path = tmp_path / "live.7.bin"
    tail = feed.Tail(tmp_path)
    assert len(tail.records()) == 0  # no file yet
    path.write_bytes(b"")
    empty = tail.records()
    assert len(empty) == 0 and empty.dtype == feed.LIVE_RECORD  # an empty file
    data = streamed((T0 + 1.5, 10.0, 0), (T0 + 1.6, 12.0, 0))
    write(path, data[:-7])  # the last record cut in half: Locust is writing it
    got = tail.records()
    assert list(got["stage"]) == [protocol.LIVE_HEAD, 0] and got[1]["ms"] == 10.0
    assert len(tail.records()) == 0  # nothing new: the half record waits
    write(path, data[-7:])
    (got,) = tail.records()
    assert (got["end"], got["ms"]) == (T0 + 1.6, 12.0)  # read whole, once
    write(tmp_path / "live.8.bin", protocol.live_head(T0 - 1))  # a second Locust process
    write(path, streamed((T0 + 1.7, 9.0, 0), t0=None))
    assert sorted(tail.records()["end"]) == [T0 - 1, T0 + 1.7]
    assert tail.offsets[str(path)] == path.stat().st_size  # read up to the end, once


def test_records_written_in_pieces_that_cut_them_anywhere_are_each_read_once(tmp_path):
    data = streamed(*((T0 + 1 + i / 10, float(i), 0) for i in range(20)))
    tail, plan = feed.Tail(tmp_path), feed.PlanSoFar(stages(5), guesses(1), warmup_s=0.0)
    for start in range(0, len(data), 11):  # 11 bytes at a time: most writes end inside a record
        write(tmp_path / "live.1.bin", data[start : start + 11])
        plan.feed(tail.records())
    assert plan.t0 == T0 and plan.run(0).requests == 20
    assert plan.run(0).mean_ms == pytest.approx(np.mean(np.arange(20.0)))


def _run_locustfile(code: str, cwd) -> None:
    """The locustfile's own functions, in a process of their own (importing Locust patches it with gevent)."""
    prelude = f"""
import importlib.util, sys, gevent
sys.path.insert(0, {str(LOCUSTFILES)!r})  # as Locust puts the locustfile's folder first
spec = importlib.util.spec_from_file_location("pattern", {str(LOCUSTFILES / "pattern.py")!r})
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
import lab_plan
"""
    subprocess.run([sys.executable, "-c", prelude + code], check=True, timeout=120, cwd=cwd)


def test_the_locustfile_streams_what_the_feed_reads(tmp_path):
    _run_locustfile(
        f"""
m.LAB.t0 = {T0}
lab_plan.LIVE_EVERY_S = 0.01
m.LAB.records[:] = [[({T0 + 1.5}, 10.0, True, 42, 0)], []]
streaming = gevent.spawn(m.LAB.stream, {str(tmp_path / "live.1.bin")!r})
gevent.sleep(0.1)
m.LAB.records[1].append(({T0 + 2}, 20.0, False, None, 0))
m.LAB.records[0].append(({T0 + 6.5}, 30.0, True, 42, 1, {T0 + 6.4}))  # a record may carry more fields
gevent.sleep(0.1)
streaming.kill()
""",
        tmp_path,
    )
    assert (tmp_path / "live.1.bin").stat().st_size == 4 * protocol.LIVE_RECORD.size  # the head, then each once
    plan = feed.PlanSoFar(stages(5, 5), guesses(2))
    plan.feed(feed.Tail(tmp_path).records())
    assert plan.t0 == T0
    assert (plan.run(0).requests, plan.run(1).requests) == (2, 1)
    assert plan.run(1).mean_ms == 30.0


def test_a_master_writes_its_worker_s_records_on_its_own_clock(tmp_path):
    # a worker's clock 100 s behind its master's: its new records, as it sends them, as the master writes them
    _run_locustfile(
        f"""
worker = lab_plan.Lab()
worker.t0 = {T0 - 100}
worker.records[:] = [[({T0 - 98.5}, 10.0, True, 42, 0)], [({T0 - 98}, 20.0, False, None, 0)]]
written = []
sent = [worker.new_live(written)]
worker.records[0].append(({T0 - 93.5}, 30.0, True, 42, 1))
sent.append(worker.new_live(written))
assert worker.new_live(written) == b""  # nothing new
m.LAB.t0 = {T0}
import lab_master
master = lab_master.MasterSide(m.LAB, None)  # take_live needs no runner
for new in sent:
    master.take_live({str(tmp_path / "live")!r}, {{"index": 0, "t0": worker.t0, "records": new}})
""",
        tmp_path,
    )
    got = feed.Tail(tmp_path).records()
    assert list(got["end"]) == [T0, T0 + 1.5, T0 + 2, T0 + 6.5]  # the master's head, then the worker's, moved
    assert list(got["ok"]) == [False, True, False, True]
    plan = feed.PlanSoFar(stages(5, 5), guesses(2))
    plan.feed(got)
    assert (plan.t0, plan.run(0).requests, plan.run(1).requests) == (T0, 2, 1)


def test_a_run_s_mean_is_that_of_its_requests_so_far():
    plan = feed.PlanSoFar(stages(100), guesses(1), warmup_s=0.0)
    rng = np.random.default_rng(7)
    ms = rng.exponential(50.0, 3000).astype(np.float32)  # as the records carry them
    for k, chunk in enumerate(np.array_split(ms, 7)):  # a second's records at a time
        plan.feed(records(*((T0 + k + 0.5, float(v), 0) for v in chunk)))
        seen = ms[: sum(len(c) for c in np.array_split(ms, 7)[: k + 1])]
        assert plan.run(0).mean_ms == pytest.approx(np.mean(seen.astype(float)))


def test_a_run_counts_its_replies_after_its_warm_up_and_before_its_end():
    plan = feed.PlanSoFar(stages(5, 5), guesses(2), warmup_s=1.0)
    # stage 0 runs 1000-1005 (window from 1001), stage 1 1005-1010 (window from 1006)
    plan.feed(records((T0 + 0.5, 999, 0), *((T0 + 1 + i / 10, 10 + i, 0) for i in range(21)), (T0 + 5.5, 999, 0)))
    plan.feed(records((T0 + 6.5, 40, 1), (T0 + 7.0, 60, 1), (T0 + 12, 1, 7)))  # stage 7 is not in the plan
    first = plan.run(0)
    assert first.requests == 21  # the warm-up's reply and the one after the stage's end are left out
    assert first.rps == pytest.approx(21 / 2.0)  # 21 replies from 1001 to 1003
    assert first.mean_ms == pytest.approx(20.0)  # latencies 10..30
    assert (first.predicted_rps, first.predicted_ms) == (100.0, 50.0)
    second = plan.run(1)
    assert second.requests == 2 and second.rps == pytest.approx(2 / 1.0)


def test_a_snapshot_says_where_the_plan_is():
    plan = feed.PlanSoFar(stages(5, 3, 4), guesses(3))
    starting = plan.snapshot(now=T0 + 100)
    assert not starting.started and starting.stage == 0 and len(starting.runs) == 1
    plan.feed(records())
    now = plan.snapshot(now=T0 + 6.5)
    assert (now.stage, now.stages, now.planned_s) == (1, 3, 3)
    assert now.elapsed_s == pytest.approx(1.5)
    assert [r.users for r in now.runs] == [10, 20]  # the finished run and the current one
    assert math.isnan(now.runs[1].rps)  # no reply yet
    over = plan.snapshot(now=T0 + 60)
    assert (over.stage, over.elapsed_s) == (2, 4)


def test_every_is_due_once_a_period_on_a_steady_beat():
    now = [0.0]
    every = feed.Every(1.0, clock=lambda: now[0])
    due = []
    for tick in range(40):  # a tick every 0.25 s for 10 s
        now[0] = tick * 0.25
        due.append(every.due())
    assert sum(due) == 10
    assert [i for i, d in enumerate(due) if d][:3] == [0, 4, 8]
    now[0] = 30.0  # a long stall: one frame, not a burst that catches up
    assert every.due() and not every.due()


class FakeProc:
    """A Locust process that runs `ticks` loops of _watch; each wait moves the fake clock on."""

    def __init__(self, clock: list[float], ticks: int):
        self.clock, self.ticks = clock, ticks

    def poll(self):
        return None if self.ticks > 0 else 0

    def wait(self, timeout):
        self.ticks -= 1
        self.clock[0] += timeout


class FakeMeter:
    def sample(self):
        pass


def test_watch_hands_the_watcher_a_snapshot_about_once_a_second(tmp_path):
    clock = [0.0]
    write(tmp_path / "live.1.bin", streamed())
    seen = []
    plan = feed.PlanSoFar(stages(10), guesses(1))
    live = feed.Live(seen.append, tmp_path, plan, feed.Every(clock=lambda: clock[0]), wall=lambda: T0 + clock[0])
    meters = Meters(FakeMeter(), {1: FakeMeter()}, FakeMeter())
    run = Watched(FakeProc(clock, ticks=40))  # 10 s of 0.25 s ticks
    generator.watch(run, [FakeServer()], plan.stages, meters, live=live, clock=lambda: clock[0])
    assert run.status == "ok"
    assert len(seen) == 10
    assert [round(s.elapsed_s) for s in seen] == list(range(10))


def test_a_failing_watcher_is_dropped_and_the_plan_goes_on(tmp_path):
    def broken(snapshot):
        raise RuntimeError("no display")

    live = feed.Live(broken, tmp_path, feed.PlanSoFar(stages(5), guesses(1)))
    with pytest.warns(RuntimeWarning, match="live view failed"):
        live.tick()
    live.tick()  # no second warning, no error
    assert live.watcher is None


def test_a_last_frame_that_cannot_be_made_is_a_warning(tmp_path):
    live = feed.Live(lambda s: None, tmp_path, feed.PlanSoFar(stages(5), guesses(1)))
    with pytest.warns(RuntimeWarning, match="live view failed"):
        live.finish([{"pattern": "gather"}])  # a row without its figures: the plan's results still come back


def test_the_last_frame_holds_the_saved_runs_and_the_live_files_go(tmp_path):
    write(tmp_path / "live.1.bin", streamed((T0 + 2, 10.0, 0)))
    seen = []
    live = feed.Live(seen.append, tmp_path, feed.PlanSoFar(stages(5, 5), guesses(2)))
    live.stop()
    assert not list(tmp_path.glob("live.*")) and live.plan.run(0).requests == 1
    row = dict(pattern="gather", users=10, rps=95.0, mean_ms=55.0, predicted_rps=99.0, predicted_ms=51.0)
    live.finish([{**row, "requests": 400, "valid": False}])  # the plan was cut short after its first run
    (last,) = seen
    assert last.done and last.stage == 0 and last.stages == 2
    assert last.runs == (
        feed.RunSoFar("gather", 10, 95.0, 55.0, 99.0, 51.0, 400, final=True, valid=False, work="no work"),
    )
    # a run predicted before it shows that prediction, as the view did while it ran
    before = {**row, "requests": 400, "valid": True, "predicted_before_rps": 101.0, "predicted_before_ms": 49.0}
    (shown,) = feed.final([before])
    assert (shown.predicted_rps, shown.predicted_ms) == (101.0, 49.0)


def test_foreseen_takes_the_lesson_s_prediction_and_prices_fib_without_running_it(monkeypatch):
    given = model.Prediction(1.0, 2.0, "lesson")
    stage = Stage(types.SimpleNamespace(settings=Settings(threads=40, workers=1, procs=2)), GATHER)
    assert checks.foreseen(replace(stage, predicted=given), Options()) is given
    priced = []
    lesson = replace(stage, predicted=lambda d: priced.append(d) or given)
    assert checks.foreseen(lesson, Options()) is given and not priced[0].known  # no CPU measured yet
    assert math.isnan(checks.foreseen(stage, Options(expect_failures=True)).rps)
    timed = []
    monkeypatch.setattr(model, "cpu_ms", lambda n: timed.append(n) or 2.0)
    deep = checks.foreseen(replace(stage, workload=replace(GATHER, cpu_n=30)), Options())
    assert timed and max(timed) <= 20  # fib(30) is priced from fib(20), never run
    assert 0 < deep.rps < checks.foreseen(replace(stage, workload=replace(GATHER, cpu_n=20)), Options()).rps
    broken = replace(stage, predicted=lambda d: 1 / 0)
    assert math.isnan(checks.foreseen(broken, Options()).rps)  # a view without a prediction, not a failed plan


def test_foreseen_prices_like_the_model_with_no_demand():
    stage = Stage(types.SimpleNamespace(settings=Settings(threads=40, workers=1, procs=2)), GATHER)
    p = checks.foreseen(replace(stage, workload=replace(GATHER, io_ms=100)), Options())
    settings = Settings(threads=40, workers=1, procs=2)
    expected = model.predict(Workload("gather", 10, io_ms=100), settings, demand=Demand(math.nan), queueing=True)
    assert p.rps == pytest.approx(expected.rps)


def test_a_notebook_is_a_kernel_shell(monkeypatch):
    def ipython(shell):
        return types.SimpleNamespace(get_ipython=lambda: shell)

    monkeypatch.setitem(sys.modules, "IPython", ipython(None))
    assert not notebook.in_notebook()
    monkeypatch.setitem(sys.modules, "IPython", ipython(types.SimpleNamespace()))  # a terminal IPython
    assert not notebook.in_notebook()
    monkeypatch.setitem(sys.modules, "IPython", ipython(types.SimpleNamespace(kernel=object())))
    assert notebook.in_notebook()
    monkeypatch.setattr(notebook, "_view", lambda: "the chart")
    assert notebook.view() == "the chart"

    def broken():
        raise ImportError("no matplotlib")

    monkeypatch.setattr(notebook, "_view", broken)
    with pytest.warns(RuntimeWarning, match="no live view"):
        assert notebook.view() is None  # the plan still runs, without its chart


def test_outside_a_notebook_nothing_is_drawn_or_imported_from_ipython():
    code = (
        "import sys, labserver\n"
        "from labserver.harness.load import generator\nfrom labserver.harness.plans import notebook\n"
        "assert notebook._view is not None, 'labserver registers the chart'\n"
        "assert notebook.view() is None and not notebook.in_notebook()\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('IPython', 'matplotlib', 'seaborn', 'tqdm')]\n"
        "assert not heavy, heavy\n"
        "with generator.text_bar(5, True) as bar:\n"
        "    assert type(bar).__module__ == 'tqdm.std', type(bar)\n"
        "assert 'IPython' not in sys.modules and 'ipywidgets' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_no_text_bar_when_progress_is_off():
    with generator.text_bar(5, False) as bar:
        assert bar is None


def test_the_beat_comes_from_the_environment_and_inf_draws_the_first_frame_only(monkeypatch):
    now = [0.0]
    monkeypatch.setenv("LAB_LIVE_EVERY_S", "inf")
    every = feed.Every(clock=lambda: now[0])
    assert every.due()  # the first frame
    now[0] = 1e6
    assert not every.due()  # and none after it: Live.finish draws the last
    monkeypatch.setenv("LAB_LIVE_EVERY_S", "2.5")
    assert feed.Every().period_s == 2.5
    monkeypatch.delenv("LAB_LIVE_EVERY_S")
    assert feed.Every().period_s == feed.EVERY_S
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv("LAB_LIVE_EVERY_S", bad)
        with pytest.raises(ValueError, match="LAB_LIVE_EVERY_S"):
            feed.Every()


def test_while_a_master_waits_for_its_workers_the_view_says_how_many_joined(tmp_path):
    from labserver.charts.live import caption

    seen = []
    live = feed.Live(seen.append, tmp_path, feed.PlanSoFar(stages(5), guesses(1)), joining=2)
    live.tick()  # no events yet: none joined
    write(tmp_path / protocol.EVENTS_FILE, protocol.event(protocol.JOINED, T0, workers=1))
    write(tmp_path / protocol.LOG_FILE, "... Waiting for workers to be ready, 2 of 2 connected\n")  # never read
    live.every = feed.Every(0.0)
    live.tick()
    assert [s.waiting for s in seen] == ["0 of 2 joined", "1 of 2 joined"]
    assert caption(seen[-1]).endswith("users: waiting for Locust workers, 1 of 2 joined")
    write(tmp_path / "live.w0.bin", streamed())  # the first worker's requests are in: the run is on
    live.tick()
    assert seen[-1].started and seen[-1].waiting is None


def test_an_open_loop_run_is_named_by_its_rate_not_its_one_user():
    closed = feed.RunSoFar("sequential", 10, 95.0, 55.0, 99.0, 51.0, 400)
    row = dict(pattern="sequential", users=1, rps=180.0, mean_ms=120.0, predicted_rps=184.7, predicted_ms=110.0)
    (open_loop,) = feed.final([{**row, "requests": 900, "valid": True, "rate": 184.7}])
    assert closed.load == "10" and open_loop.load == "184.7/s"
