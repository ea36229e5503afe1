"""The decision card (lesson 99): each row's ratio read from a small hand-made frame of runs."""

import math

import pandas as pd
import pytest

from labserver import lessons
from labserver.course import card
from labserver.lessons import card_row
from labserver.paths import ROOT


def _run(lesson, pattern, users, rps, **row):
    setting = {"tasks": 1, "io_ms": 100, "cpu_n": 0, "workers": 1, "threads": 40, "usable_cores": 2}
    setting |= {"timeout_s": 60.0, "failures": 0}  # every run has a client timeout; a valid one, no failures
    return {"lesson": lesson, "pattern": pattern, "users": users, "rps": rps, "valid": True, **setting, **row}


L01, L02, L03, L04, L05 = "01_async_vs_sync", "02_sequential_vs_gather", "03_cpu_bound", "04_workers", "05_blocking"
RUNS = pd.DataFrame([
    _run(L01, "threadpool", 10, 99.0),  # below the pool: not a run of its ceiling
    _run(L01, "sequential", 10, 99.5),
    _run(L01, "threadpool", 120, 390.0),
    _run(L01, "sequential", 120, 1170.0),
    _run(L01, "threadpool", 160, 392.0),
    _run(L01, "sequential", 160, 1560.0),
    _run(L01, "sequential", 120, 99999.0, valid=False),  # invalid: never read
    _run(L02, "sequential", 100, 160.0, tasks=3, io_ms=200, workers=2),
    _run(L02, "gather", 100, 480.0, tasks=3, io_ms=200, workers=2),
    *(_run(L03, p, 20, rps, io_ms=0, cpu_n=25, procs=2) for p, rps in [("threadpool", 80.0), ("sequential", 84.0),
                                                                       ("processpool", 156.0)]),
    _run(L03, "processpool", 20, 40.0, io_ms=50, cpu_n=25),  # fib + sleep: paired with nothing, left out
    _run(L04, "sequential", 20, 80.0, io_ms=0, cpu_n=25, workers=1),
    _run(L04, "sequential", 20, 150.0, io_ms=0, cpu_n=25, workers=2),
    _run(L04, "sequential", 20, 150.0, io_ms=0, cpu_n=25, workers=3),  # past the cores
    _run(L04, "sequential", 100, 990.0, workers=2),  # I/O-bound: not the CPU's
    _run(L05, "blocking", 5, 9.9),
    _run(L05, "blocking", 50, 10.1),
    _run(L05, "blocking", 50, 40.0, timeout_s=2.0, failures=60),  # its rps counts the give-ups: left out
    _run(L01, "sequential", 120, 5000.0, rate=5000.0),  # an open loop: its rps is the rate sent, not read
])  # fmt: skip


def test_the_card_has_its_columns_and_a_row_each():
    frame = card.card(RUNS)
    assert list(frame.columns) == card.COLUMNS
    assert len(frame) == len(card.ROWS)
    link = card.YOURS_LINK
    assert [text.replace(f", {link}", "") for text in frame["lesson"]] == [
        "01",
        "01",
        "05",
        "02",
        "11",
        "03, 04",
        "14",
        "03",
        "10",
        "10",
        "06, 12",
        "12",
        "13",
        "07, 11",
        "08, 09",
        "05",
    ]
    linked = [row.situation for row, text in zip(card.ROWS, frame["lesson"], strict=True) if link in text]
    assert sorted(linked) == sorted(card.YOURS)  # every row measure names links to it, and no other


def test_async_over_def_is_the_smallest_ratio_at_three_times_the_pool():
    got = lessons.async_vs_sync.async_over_def(RUNS)
    assert got.ratio == pytest.approx(1170 / 390)
    assert got.text == "3.0× (async / def at 120 users)"


def test_the_def_endpoint_is_read_against_threads_over_io():
    got = lessons.async_vs_sync.def_at_threads(RUNS)
    assert got.ratio == pytest.approx((390 / 400 + 392 / 400) / 2)
    assert "of threads / io (def at 120–160 users)" in got.text


def test_gather_over_sequential():
    got = lessons.sequential_vs_gather.gather_over_sequential(RUNS)
    assert got.ratio == pytest.approx(3.0)
    assert got.text == "3.0× (gather / sequential, 3 waits, 100 users)"


def test_the_pool_and_the_workers_each_give_their_ratio():
    got = lessons.workers.pool_and_workers(RUNS)
    assert got.ratio == pytest.approx(156 / 82)
    assert got.text == "1.9× (process pool / `def` and `async def`, fib(25)); 1.9× (2 workers / 1)"


def test_the_blocked_loop_is_read_against_one_over_io_without_the_timeout_run():
    got = lessons.blocking.blocked_loop(RUNS)
    assert got.ratio == pytest.approx(1.0)
    assert got.text == "1.00 of workers / io (time.sleep in async def at 5–50 users)"


def test_a_row_without_runs_says_not_measured_yet():
    assert math.isnan(lessons.blocking.offload_at_threads(RUNS).ratio)
    offload = card.card(RUNS).iloc[2]
    assert offload["measured"].startswith("not measured yet")
    measured = card.card(RUNS)["measured"]
    # offload, lesson 11's dependency, the slow route, hashed, lesson 10's two, lesson 06's clients, the fan-out,
    # clients that leave, the database, overload
    assert sum(m.startswith("not measured yet") for m in measured) == 11


def test_offload_is_read_once_its_runs_are_on_disk():
    runs = pd.concat([RUNS, pd.DataFrame([_run(L05, "offload", 50, 388.0)])], ignore_index=True)
    assert card.card(runs).iloc[2]["measured"] == "0.97 of threads / io (offload at 50 users)"


def test_no_runs_at_all():
    frame = card.card(pd.DataFrame())
    assert frame["measured"].str.startswith("not measured yet").all()


def test_markdown_is_a_table_with_a_line_per_row():
    text = card.markdown(card.card(RUNS))
    lines = text.splitlines()
    assert lines[0] == "| situation | write | ceiling | how you would notice it | measured | lesson |"
    assert lines[1] == "|---|---|---|---|---|---|"
    assert len(lines) == 2 + len(card.ROWS)
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines[2:])


def test_markdown_escapes_a_pipe_in_a_cell():
    frame = pd.DataFrame([["a | b", "x", "y", "w", "z", "01"]], columns=card.COLUMNS)
    assert "a \\| b" in card.markdown(frame)


def test_workers_without_their_cores_recorded_are_not_read():
    runs = RUNS.assign(usable_cores=float("nan"))
    assert lessons.workers.pool_and_workers(runs).text == "1.9× (process pool / `def` and `async def`, fib(25))"


L10 = "10_without_the_gil"


def _build(build, gil, rps, users=20, **row):
    return _run(
        L10, "threadpool", users, rps, **{"io_ms": 0, "cpu_n": 25, "build": build, "gil": gil, "part": "fib", **row}
    )


def test_free_threads_read_the_same_build_with_and_without_its_gil():
    runs = pd.DataFrame([
        _build("3.11.7, GIL build", True, 124.0),  # another build: not the baseline
        _build("3.13.5t, GIL on", True, 80.0),
        _build("3.13.5t, GIL off", False, 150.0),
        _build("3.13.5t, GIL off", False, 70.0, users=1),  # one user: not the most users
        _build("3.13.5t, GIL off", False, 75.0, part="threads", threads=1),  # the threads run's small pool
    ])  # fmt: skip
    said = "1.9× the same build with its GIL; 1.2× the usual build's thread pool (fib(25))"
    assert lessons.without_the_gil.free_threads(runs) == card_row.Measured(150.0 / 80.0, said)


def test_free_threads_compare_busy_runs_whatever_their_users():
    """A run held to one core has 20 users on any machine; the GIL-free pool 10 per core (160 on 16 cores)."""
    pool = {"io_ms": 0, "cpu_n": 25, "build": "3.11.7, GIL build", "gil": True, "part": "fib", "load": "busy"}
    runs = pd.DataFrame(
        [
            _build("3.13.5t, GIL on", True, 80.0, load="busy"),
            _build("3.13.5t, GIL off", False, 1200.0, users=160, load="busy"),
            _build("3.13.5t, GIL off", False, 70.0, users=1, load="alone"),
            _build("3.11.7, GIL build", True, 124.0, load="busy"),
            _run(L10, "processpool", 160, 1500.0, **pool),
        ]
    )
    got = lessons.without_the_gil.free_threads(runs)
    assert got.ratio == 1200.0 / 80.0
    assert (
        got.text
        == "15.0× the same build with its GIL; 9.7× the usual build's thread pool, 0.8× its process pool (fib(25))"
    )


def test_free_threads_without_a_free_threaded_run_is_not_measured_yet():
    assert math.isnan(
        lessons.without_the_gil.free_threads(pd.DataFrame([_build("3.11.7, GIL build", True, 124.0)])).ratio
    )


def _client(client, client_ms, users=100, requests=1000, **row):
    return {"lesson": "06_client_side", "pattern": "sequential", "client": client, "users": users,
            "requests": requests, "client_ms": client_ms, "valid": True, "rps": 1000.0, **row}  # fmt: skip


def test_a_reused_client_reads_its_cpu_against_requests_get_at_the_most_in_flight():
    runs = pd.DataFrame(
        [
            _client("threadpool", 0.85),
            _client("session", 0.68),
            _client("aiohttp", 0.23),
            _client("threadpool", 0.40, users=10),  # fewer in flight: another setting
            _client("session", 0.10, valid=False),  # invalid: never read
        ]
    )
    got = lessons.client_side.reused_client(runs)
    assert got.ratio == pytest.approx(0.68 / 0.85)
    assert got.text == (
        "a Session costs 0.80× the client CPU per request of `requests.get`, aiohttp 0.27× (100 in flight)"
    )
    assert math.isnan(
        lessons.client_side.reused_client(runs[runs["client"] != "session"]).ratio
    )  # no Session run: not yet


def test_c_code_that_lets_go_of_the_gil_is_read_as_cores_busy_over_fib_s():
    runs = pd.DataFrame([
        _run(L03, "threadpool", 20, 80.0, io_ms=0, cpu_n=25, part="fib", server_cpu=1.0),
        _run(L03, "hashed", 20, 130.0, io_ms=0, cpu_n=25, part="fib", server_cpu=1.8),
        _run(L03, "threadpool", 20, 60.0, io_ms=50, cpu_n=25, part="fib + sleep", server_cpu=0.5),  # not fib alone
    ])  # fmt: skip
    got = lessons.cpu_bound.released_gil(runs)
    assert got.ratio == pytest.approx(1.8)
    assert got.text == "1.80 cores busy hashing in a `def`, against 1.00 computing fib"
    assert math.isnan(lessons.cpu_bound.released_gil(RUNS).ratio)  # no hashed run: not yet


def test_a_database_pool_is_read_against_connections_over_hold_where_it_is_scarcer_than_the_threads():
    runs = pd.DataFrame([
        _run("07_database", "sync_select", 80, 190.0, db_pool=20, db_hold_ms=100.0),
        _run("07_database", "sync_select", 10, 95.0, db_pool=20, db_hold_ms=100.0),  # fewer users than connections
        _run("07_database", "sync_select", 80, 390.0, db_pool=60, db_hold_ms=100.0),  # the threads are scarcer
    ])  # fmt: skip
    got = lessons.database.database_pool(runs)
    assert got.ratio == pytest.approx(190 / 200)
    assert got.text == "0.95 of connections / hold (20 connections, 40 threads)"
    assert math.isnan(lessons.database.database_pool(RUNS).ratio)


def _open(lesson, rate, rps, first, last, shed=0.0, **row):
    return _run(lesson, "threadpool", 1, rps, rate=rate, shed=shed, mean_first_third_ms=first,
                mean_last_third_ms=last, **row)  # fmt: skip


def test_overload_reads_the_mean_latency_s_growth_through_the_run_unbounded_and_bounded():
    runs = pd.DataFrame([
        _open("08_overload", 235.0, 197.0, 700.0, 1750.0),
        _open("08_overload", 150.0, 150.0, 110.0, 112.0),  # within capacity: not overload
        _open("09_stalls_and_shedding", 294.0, 198.0, 200.0, 202.0, shed=0.33),
        # uvicorn's --limit-concurrency queues nothing: not a bounded queue's run
        _open("09_stalls_and_shedding", 294.0, 190.0, 200.0, 201.0, shed=0.38, limit_concurrency=21.0),
    ])  # fmt: skip
    got = lessons.overload.past_capacity(runs)
    assert got.ratio == pytest.approx(2.5)
    assert got.text == (
        "unbounded: mean latency 2.5× higher in the run's last third than its first; a bounded queue: 1.01×, 33% shed"
    )
    assert math.isnan(lessons.overload.past_capacity(runs.iloc[2:]).ratio)  # no unbounded run past capacity
    assert math.isnan(lessons.overload.past_capacity(RUNS).ratio)


def test_the_interpreter_pool_is_read_against_the_same_build_s_thread_pool_with_its_gil():
    def ft(pattern, rps, build, load="busy", cpu=1.0):
        return _run("10_without_the_gil", pattern, 20, rps, cpu_n=25, io_ms=0, part="fib", load=load, build=build,
                    server_cpu=cpu)  # fmt: skip

    runs = pd.DataFrame([
        ft("threadpool", 40.0, "3.13.5t, GIL on"),
        ft("interpreterpool", 70.0, "3.13.5t, GIL on", cpu=1.9),
        ft("threadpool", 36.0, "3.13.5t, GIL on", load="alone"),  # one user: not a busy run
        ft("interpreterpool", 75.0, "3.13.5t, GIL off"),  # another build
    ])  # fmt: skip
    got = lessons.without_the_gil.interpreter_pool(runs)
    assert got.ratio == pytest.approx(70 / 40)
    assert got.text == "1.75× the same build's thread pool with its GIL, 1.90 cores busy"
    assert math.isnan(lessons.without_the_gil.interpreter_pool(RUNS).ratio)


def test_a_blocking_dependency_is_read_against_threads_over_io_and_beside_an_async_one():
    runs = pd.DataFrame([
        _run("11_app_threads", "syncdep", 100, 196.0, io_ms=200),
        _run("11_app_threads", "asyncdep", 100, 490.0, io_ms=200),
    ])  # fmt: skip
    got = lessons.app_threads.blocking_dependency(runs)
    assert got.ratio == pytest.approx(196 / 200)
    assert got.text == "0.98 of threads / io with a `def` dependency; an `async def` one 2.5× (100 users)"
    assert math.isnan(lessons.app_threads.blocking_dependency(runs.iloc[:1]).ratio)  # no async dependency run: not yet


def test_the_fan_out_is_read_bounded_over_unbounded_with_their_cpu_per_call():
    def fan(pattern, rps, server_ms):
        return _run("12_calling_services", pattern, 20, rps, tasks=4, io_ms=200, server_ms=server_ms)

    runs = pd.DataFrame([fan("fanoutbounded", 49.0, 7.0), fan("fanout", 17.5, 56.0), fan("callreused", 24.5, 7.1)])
    got = lessons.calling_services.fan_out(runs)
    assert got.ratio == pytest.approx(49 / 17.5)
    assert (
        got.text
        == "bounded 2.8× the unbounded fan-out's req/s; unbounded, a call cost 8.0× the CPU (20 users × 4 calls)"
    )
    assert math.isnan(lessons.calling_services.fan_out(runs[runs["pattern"] != "fanout"]).ratio)


def test_clients_that_leave_are_read_checking_over_not_checking():
    def run(pattern, server_ms, cpu_n=25):
        return _run("13_clients_that_leave", pattern, 2, 5.0, tasks=6, io_ms=150, cpu_n=cpu_n, server_ms=server_ms,
                    failures=70)  # fmt: skip

    got = lessons.clients_that_leave.abandoned(
        pd.DataFrame([run("sequential", 74.0), run("watchful", 38.0), run("sequential", 2.0, 0)])
    )
    assert got.ratio == pytest.approx(0.5)
    assert got.text == "0.50 of the fib CPU per abandoned request, checking between 6 steps"
    assert math.isnan(lessons.clients_that_leave.abandoned(RUNS).ratio)


def test_a_slow_route_is_read_as_the_cheap_route_s_p95_on_the_loop_over_in_a_process():
    def run(pattern, where, p95, cpu_n=29):
        return _run("14_one_slow_route", pattern, 1, 7.0, cpu_n=cpu_n, where=where, cheap_p95_ms=p95)

    runs = pd.DataFrame([run("sequential", "none", 2.0, 0), run("sequential", "event loop", 80.0),
                         run("threadpool", "thread pool", 20.0), run("processpool", "process pool", 2.0)])  # fmt: skip
    got = lessons.one_slow_route.slow_route(runs)
    assert got.ratio == pytest.approx(40.0)
    loop = "a cheap request's p95 round trip: 80 ms beside fib on the loop"
    assert got.text == f"{loop}, 20 in a thread, 2.0 in a process (40×)"
    assert math.isnan(lessons.one_slow_route.slow_route(runs[runs["where"] != "thread pool"]).ratio)
    assert math.isnan(lessons.one_slow_route.slow_route(RUNS).ratio)


def _batched(values):
    """The offload row's runs (lesson 05, 50 users, 40 threads, 100 ms: 400 req/s its bound), one per batch, each
    batch with a run of every other lesson the card reads."""
    others = sorted({lesson for row in card.ROWS for lesson in row.lessons} - {"05"})
    runs = []
    for i, rps in enumerate(values):
        batch = f"2026112{i}T000000"
        runs += [_run(L05, "offload", 50, rps, batch=batch)] + [
            _run(f"{n}_x", "x", 1, 1.0, batch=batch) for n in others
        ]
    return pd.DataFrame(runs)


def test_a_batch_of_the_card_ran_every_lesson_it_reads():
    runs = _batched([400.0, 400.0])
    alone = _run(L05, "offload", 50, 400.0, batch="20261129T000000")  # lesson 05 run again on its own
    assert card.batches(pd.concat([runs, pd.DataFrame([alone])]), 3) == ["20261120T000000", "20261121T000000"]


def test_a_figure_is_ranged_over_the_last_batches_with_their_count():
    row = next(r for r in card.ROWS if r.measure is lessons.blocking.offload_at_threads)
    runs = _batched([100.0, 392.0, 396.0, 400.0])  # the first batch is past the last three
    assert card.batches(runs, 3) == ["20261121T000000", "20261122T000000", "20261123T000000"]  # the last three
    text = card.ranged(row, runs, card.batches(runs, 3))
    assert text == "0.98–1 over 3 batches (the last: 1.00 of threads / io (offload at 50 users))"


def test_a_figure_that_moves_past_twenty_percent_says_why():
    row = next(r for r in card.ROWS if r.measure is lessons.blocking.offload_at_threads)
    runs = _batched([200.0, 400.0])
    text = card.ranged(row, runs, card.batches(runs, 3))
    assert text.startswith(
        "0.5–1 over 2 batches (the last: 1.00 of threads / io (offload at 50 users)); moves past ±20%: "
    )
    assert text.endswith(row.moves or "why is not known yet")
    assert card.ranged(row, runs.iloc[0:0], []) == f"{card_row.NOT_YET} ({row.shows})"


def test_the_readme_card_is_the_card_s_rows_as_make_card_writes_them():
    readme = (ROOT / "README.md").read_text()
    rows = [line for line in card.between(readme, "card").splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == [r.situation for r in card.ROWS]
    for line, row in zip(rows, card.ROWS, strict=True):  # the words are card.py's: only the figures come from runs
        assert line.startswith(f"| {row.situation} | {row.write} | {row.ceiling} | {row.notice} | ")
    short = card.between(readme, "short")
    assert short.strip() == card.markdown(card.short(card.card(pd.DataFrame()))).strip()
    assert len(card.FIRST) == 5 and set(card.FIRST) <= {r.situation for r in card.ROWS}


def test_make_card_writes_between_the_marks_and_nothing_else():
    (s0, s1), (c0, c1) = card.MARKS["short"], card.MARKS["card"]
    text = f"top\n{s0}\nold\n{s1}\nmiddle\n{c0}\n{c1}\nend"
    new = card.written(card.written(text, "short", "A\n"), "card", "B\n")
    assert new == f"top\n{s0}\nA\n{s1}\nmiddle\n{c0}\nB\n{c1}\nend"
    with pytest.raises(ValueError, match="marks of the card are missing"):
        card.between("no marks", "card")


def test_make_card_refuses_a_batch_count_below_one(capsys):
    with pytest.raises(SystemExit):
        card.main(["--batches", "0"])
    assert "--batches" in capsys.readouterr().err
