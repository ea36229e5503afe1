"""Where a sync request's extra CPU goes in lesson 07's fib sweep: the GIL's turns, and the rest.

Once both versions keep the worker's core busy, each serves 1 core / its CPU per request, so
whatever a sync request spends over an async one is throughput lost. Part of it is the sync
request's own work at any depth (two new threads, hand-offs across cores), part is fib taking
turns on the GIL on many threads at once (`cores.thread_cost` times that in a quiet process),
and what neither explains is left unnamed: nothing here measures it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from labserver.theory.pools import CONVERGED


@dataclass(frozen=True)
class ExtraCpu:
    """A sync request's CPU over an async one's at the sweep's deepest depth (ms per request), split by cause."""

    shallow: int  # the sweep's shallowest depth: the request without fib, nearly
    deep: int  # its deepest
    thread_cost: float  # fib's CPU on many threads over its CPU on one (cores.thread_cost)
    extra_ms: float  # sync − async at `deep`
    fib_ms: float  # fib's CPU at `deep` on one thread: the async server's own reading where it has one
    fib_in_server: bool  # whether fib_ms is that reading (async's CPU at `deep` less at `shallow`), not a timing
    turns_ms: float  # fib taking turns on the GIL: (thread_cost − 1) × fib_ms
    own_ms: float  # sync − async at `shallow`: the request's own work (threads, hand-offs)

    @property
    def rest_ms(self) -> float:
        """What neither the turns nor the request's own work explain."""
        return self.extra_ms - self.turns_ms - self.own_ms

    def explain(self) -> str:
        """The split in a sentence, for a sweep where the two versions do not converge."""
        rest = self.rest_ms
        # the two are estimates, each from its own moment: together they can pass the gap, and then are no part of it
        past = rest < 0
        if rest > 0:
            unexplained = f"; {rest:.1f} ms neither explains."
        elif past:
            unexplained = (
                f": together {self.turns_ms + self.own_ms:.1f} ms, {-rest:.1f} ms more than the gap, which moves from "
                "round to round (the rounds below)."
            )
        else:
            unexplained = "."
        source = (
            f"as the async server ran it, over fib({self.shallow})'s request"
            if self.fib_in_server
            else "as timed in this notebook"
        )
        own = "would add" if past else "is"
        excess = self.thread_cost - 1  # to three places where it is under a tenth: 0.005 shown as 0.01 reads 2× the ms
        gil_turns = f"({excess:.{2 if excess >= 0.1 else 3}f} × fib({self.deep})'s {self.fib_ms:.1f} ms, {source})"
        turns = (
            (
                f"fib taking turns on the GIL would add {self.turns_ms:.1f} ms {gil_turns}"
                if past
                else f"{self.turns_ms:.1f} ms of it is fib taking turns on the GIL {gil_turns}"
            )
            if self.thread_cost > 1
            else f"none of it measurably fib's turns on the GIL (their timing read {self.thread_cost:.2f}×)"
        )
        if self.extra_ms <= 0:
            return (
                f"No convergence within {CONVERGED:.0%} over the rounds (their median); in this round, at "
                f"fib({self.deep}), a sync request cost {-self.extra_ms:.1f} ms less CPU than an async one: the gap "
                "moves from round to round, more than the GIL's turns explain."
            )
        return (
            f"No convergence within {CONVERGED:.0%} over the rounds (their median): in this round, at "
            f"fib({self.deep}), a sync request cost {self.extra_ms:.1f} ms more CPU than an async one. "
            f"{turns[0].upper()}{turns[1:]}; the sync request's own work, as at fib({self.shallow}) (two new threads, "
            f"GIL turns across cores), {own} {self.own_ms:.1f} ms{unexplained}"
        )


def extra_cpu(sweep: pd.DataFrame, thread_cost: float, fib_ms: float) -> ExtraCpu:
    """Split the sync version's extra CPU per request at the sweep's deepest depth.

    `sweep` holds one run per `cpu_n` and `driver` (sync, async) with the server's CPU per
    request (`server_ms`); `fib_ms` is fib's CPU at the deepest depth on one thread, as timed
    elsewhere. The server's own reading of it stands in where the sweep has one: the async
    request's CPU at the deepest depth less at the shallowest, fib on the loop's one thread, at
    the speed the runs met (a timing in the notebook meets the cores at another moment).
    """
    shallow, deep = int(sweep["cpu_n"].min()), int(sweep["cpu_n"].max())
    at_shallow, at_deep = (sweep[sweep["cpu_n"] == n].set_index("driver")["server_ms"] for n in (shallow, deep))
    in_server = at_deep["async"] - at_shallow["async"]
    read = math.isfinite(in_server) and in_server > 0
    fib_ms = in_server if read else fib_ms
    return ExtraCpu(
        shallow=shallow,
        deep=deep,
        thread_cost=thread_cost,
        fib_ms=fib_ms,
        fib_in_server=read,
        extra_ms=at_deep["sync"] - at_deep["async"],
        turns_ms=max(thread_cost - 1, 0.0) * fib_ms,  # a timing under 1 is the cores' speed moving, not turns
        own_ms=at_shallow["sync"] - at_shallow["async"],
    )


def explain(sweep: pd.DataFrame, thread_cost: float, fib_ms: float, converged: int | None) -> str:
    """Why the two versions converge at the deepest depth, or where the sync version's extra CPU goes."""
    if not converged:  # None: no depth of the sweep where they stay within CONVERGED of each other
        return extra_cpu(sweep, thread_cost, fib_ms).explain()
    at_deep = sweep[sweep["cpu_n"] == sweep["cpu_n"].max()].set_index("driver")["server_ms"]
    ratio = at_deep["sync"] / at_deep["async"]
    # only the sweep's two ends run in rounds: a depth between them is one round's
    converge = (
        f"The two converge (within {CONVERGED:.0%}; at the ends, the median of the rounds) from fib({converged}) on"
    )
    # the turns timed in the notebook beside what the server's runs read: the two need not agree
    timed = f"the timing above put fib's turns at {thread_cost:.2f}×"
    if abs(ratio - 1) <= CONVERGED:
        per = f"their CPU per request (sync / async {ratio:.2f}× in this round; {timed})"
        return f"{converge}: {per} differs little next to fib."
    # one round's pair, a run apart, can straddle a change in the cores' speed that the rounds' median leaves out
    return (
        f"{converge}; in this round their CPU per request stood {ratio:.2f}× apart (sync / async; {timed}), off the "
        "rounds' median: a run in a slower moment reads dearer (the table of runs after the Summary names it)."
    )


def per_switch_us(any_core: Mapping[str, float], pinned: Mapping[str, float]) -> float:
    """The sync worker's extra CPU per request on any core over pinned, per extra context switch (µs).

    Each maps "CPU ms per request" and "switches per request" (runs.sync_rounds). On one core a
    thread runs until it blocks, and the next one takes the GIL there; on two, a woken thread
    starts on the other core at once, finds the GIL held and sleeps again: more switches for the
    same work. Whatever else the extra CPU holds (caches cold on the other core) counts here too,
    so this is what the switches cost at most. NaN where any core did not switch more.
    """
    extra_switches = any_core["switches per request"] - pinned["switches per request"]
    extra_ms = any_core["CPU ms per request"] - pinned["CPU ms per request"]
    return extra_ms / extra_switches * 1000 if extra_switches > 0 else math.nan


def spread(any_core: Mapping[str, float], pinned: Mapping[str, float]) -> str:
    """Where the sync worker's CPU went on any core and pinned, and what its loop's thread did, in a
    sentence: each maps runs.sync_rounds' figures (medians over the rounds)."""

    def where(run: Mapping[str, float]) -> str:
        switches = run["switches per request"]
        counted = f", {switches:.0f} context switches per request" if math.isfinite(switches) else ""
        return f"{run['cores busy']:.2f} cores busy, {run['in the kernel']:.0%} of its CPU in the kernel{counted}"

    cost = per_switch_us(any_core, pinned)
    each = f" Each extra switch came with at most {cost:.1f} µs of extra CPU." if math.isfinite(cost) else ""
    return (
        f"The sync worker on any core: {where(any_core)}; pinned: {where(pinned)}.{each} The model gives a "
        f"worker one core: one thread at a time runs Python under the GIL.{_beside(any_core['cores busy'])} On any "
        f"core the sync run read {any_core['measured / model']:.2f} of the model, pinned "
        f"{pinned['measured / model']:.2f}.{_asleep(any_core)}"
    )


def _beside(busy: float) -> str:
    """What ran beside the GIL on any core: the cores the sync worker kept busy past one, if any."""
    if busy <= 1:
        return " It kept no more than one core busy: nothing measurable ran beside the GIL."
    return (
        f" The {busy - 1:.2f} of a core it kept busy past one was work done without the GIL, on the other core: "
        "the kernel's (switches, sockets) and libpq's, which the model does not price."
    )


def _asleep(any_core: Mapping[str, float]) -> str:
    """What the loop's thread did on any core, where the run measured it (Linux): every request passes
    through it, so the time it neither ran nor waited for a CPU, with requests queued, is what held
    the worker back; "" where it was not measured."""
    ran, waited = any_core.get("loop ran", math.nan), any_core.get("loop waited for a CPU", math.nan)
    if not (math.isfinite(ran) and math.isfinite(waited)):
        return ""
    return (
        f" Every request passes through the worker's event loop, one thread: on any core it ran {ran:.0%} of "
        f"the time and waited {waited:.0%} for a CPU; the other {max(0.0, 1 - ran - waited):.0%} it slept, with "
        "requests queued: on the GIL, while other threads held it or handed it on, or for a request to come in."
    )
