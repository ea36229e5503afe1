"""Where a sync request's extra CPU goes in a fib sweep: the GIL's turns, its own work, and the rest."""

import math

import pandas as pd
import pytest

from labserver.theory import gil


def sweep(sync_ms=(3.0, 60.0), async_ms=(1.0, 40.0)) -> pd.DataFrame:
    """Two depths × two drivers, with the server's CPU per request (ms) as the harness records it."""
    return pd.DataFrame(
        {"cpu_n": [15, 15, 28, 28], "driver": ["sync", "async"] * 2,
         "server_ms": [sync_ms[0], async_ms[0], sync_ms[1], async_ms[1]]}
    )  # fmt: skip


def test_extra_cpu_splits_the_gap_into_turns_own_work_and_the_rest():
    split = gil.extra_cpu(sweep(), thread_cost=1.1, fib_ms=50.0)
    assert (split.shallow, split.deep) == (15, 28)
    assert split.extra_ms == pytest.approx(20.0)  # 60 − 40 at the deepest depth
    assert split.own_ms == pytest.approx(2.0)  # 3 − 1 at the shallowest
    # fib as the server read it, async's 40 − 1 (the 50 timed elsewhere met the cores at another speed)
    assert split.turns_ms == pytest.approx(3.9)  # (1.1 − 1) × 39
    assert split.rest_ms == pytest.approx(14.1)
    flat = gil.extra_cpu(sweep(async_ms=(1.0, 1.0)), thread_cost=1.1, fib_ms=50.0)  # no fib read in the server
    assert flat.turns_ms == pytest.approx(5.0)  # the timing given, then


def test_the_sentence_names_what_neither_explains_only_when_something_is_left():
    left = gil.extra_cpu(sweep(), thread_cost=1.1, fib_ms=50.0).explain()
    assert left.startswith(
        "No convergence within 15% over the rounds (their median): in this round, at fib(28), a sync request cost "
        "20.0 ms more"
    )
    assert "14.1 ms neither explains" in left
    assert (
        "as at fib(15)" in left
        and "(0.10 × fib(28)'s 39.0 ms, as the async server ran it, over fib(15)'s request)" in left
    )
    assert left.endswith("14.1 ms neither explains.")  # no cause that nothing measured
    cheaper = gil.extra_cpu(sweep(), thread_cost=0.99, fib_ms=50.0)  # the threads' timing read under one thread's
    assert cheaper.turns_ms == 0.0 and cheaper.rest_ms == pytest.approx(18.0)
    assert "None of it measurably fib's turns on the GIL (their timing read 0.99×)" in cheaper.explain()
    timed = gil.extra_cpu(sweep(async_ms=(1.0, 1.0)), thread_cost=1.1, fib_ms=50.0).explain()
    assert "(0.10 × fib(28)'s 50.0 ms, as timed in this notebook)" in timed
    small = gil.extra_cpu(sweep(async_ms=(1.0, 1.0)), thread_cost=1.005, fib_ms=56.8).explain()
    assert "0.3 ms of it is fib taking turns on the GIL (0.005 × fib(28)'s 56.8 ms" in small  # not "0.01 ×"
    nothing_left = gil.extra_cpu(sweep(), thread_cost=1.5, fib_ms=50.0).explain()  # turns 19.5 ms + own 2 > the gap
    assert "neither explains" not in nothing_left
    # turns 0.5 × 39 ms and own work 2 ms pass the gap of 20: said, not dropped
    assert "Fib taking turns on the GIL would add 19.5 ms" in nothing_left and "of it is" not in nothing_left
    assert nothing_left.endswith(
        "(two new threads, GIL turns across cores), would add 2.0 ms: together 21.5 ms, 1.5 ms more than the gap, "
        "which moves from round to round (the rounds below)."
    )


def test_a_round_where_sync_cost_less_says_so_not_a_negative_extra():
    cheaper = gil.ExtraCpu(
        shallow=15, deep=28, thread_cost=1.1, fib_ms=50.0, fib_in_server=False, extra_ms=-4.0, turns_ms=5.0, own_ms=2.0
    ).explain()
    assert "a sync request cost 4.0 ms less CPU than an async one" in cheaper
    assert "-4.0" not in cheaper and "neither explains" not in cheaper


def test_explain_says_why_when_the_two_converge():
    text = gil.explain(sweep(sync_ms=(3.0, 44.0)), thread_cost=1.1, fib_ms=50.0, converged=28)
    assert text == (
        "The two converge (within 15%; at the ends, the median of the rounds) from fib(28) on: their CPU per request "
        "(sync / async 1.10× in this round; the timing above put fib's turns at 1.10×) differs little next to fib."
    )


def test_explain_says_when_this_rounds_pair_stands_apart_from_the_median():
    text = gil.explain(sweep(sync_ms=(3.0, 52.8)), thread_cost=1.1, fib_ms=50.0, converged=28)
    assert "differs little" not in text
    assert (
        "in this round their CPU per request stood 1.32× apart (sync / async; the timing above put fib's turns at"
        in text
    )
    assert "1.10×), off the rounds' median" in text


def test_explain_splits_the_extra_cpu_when_they_do_not():
    assert gil.explain(sweep(), 1.1, 50.0, converged=None) == gil.extra_cpu(sweep(), 1.1, 50.0).explain()


ANY_CORE = {"cores busy": 1.1, "CPU ms per request": 0.64, "in the kernel": 0.49, "switches per request": 54.0,
            "measured / model": 1.1}  # fmt: skip
PINNED = {"cores busy": 0.97, "CPU ms per request": 0.35, "in the kernel": 0.28, "switches per request": 10.0,
          "measured / model": 0.97}  # fmt: skip


def test_per_switch_is_the_extra_cpu_over_the_extra_switches():
    assert gil.per_switch_us(ANY_CORE, PINNED) == pytest.approx(0.29 / 44 * 1000)


def test_per_switch_is_nan_without_more_switches():
    assert math.isnan(gil.per_switch_us(ANY_CORE, {**PINNED, "switches per request": 54.0}))
    assert math.isnan(gil.per_switch_us({**ANY_CORE, "switches per request": math.nan}, PINNED))


def test_spread_gives_both_servers_figures_and_the_fit():
    text = gil.spread(ANY_CORE, PINNED)
    assert "1.10 cores busy, 49% of its CPU in the kernel, 54 context switches per request" in text
    assert "pinned: 0.97 cores busy, 28% of its CPU in the kernel, 10 context switches" in text
    assert "at most 6.6 µs" in text and "read 1.10 of the model, pinned 0.97" in text
    assert "The 0.10 of a core it kept busy past one was work done without the GIL" in text


def test_spread_says_nothing_ran_beside_the_gil_where_one_core_or_less_was_busy():
    text = gil.spread({**ANY_CORE, "cores busy": 0.98}, PINNED)
    assert "nothing measurable ran beside the GIL" in text and "past one" not in text


def test_spread_without_switch_counts_leaves_them_out():
    text = gil.spread({**ANY_CORE, "switches per request": math.nan}, {**PINNED, "switches per request": math.nan})
    assert "switches per request" not in text and "µs" not in text


def test_spread_says_what_the_loop_did_where_it_was_measured():
    measured = {**ANY_CORE, "loop ran": 0.39, "loop waited for a CPU": 0.19}
    text = gil.spread(measured, PINNED)
    assert "on any core it ran 39% of the time and waited 19% for a CPU; the other 42% it slept" in text
    assert "slept" not in gil.spread({**measured, "loop ran": math.nan}, PINNED)
    assert "slept" not in gil.spread(ANY_CORE, PINNED)  # runs from before the loop was measured
