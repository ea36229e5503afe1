"""A route of one's own priced at one user before any load: where its endpoint runs (the app's answer), the stages
that price it, two rounds of prices (the first, which pays for what the route builds once, left out), and its
`Verdict` so far with the stage the model and the sweep read it as.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from labserver import protocol
from labserver.demo.traits import Where
from labserver.harness.load import client, measurement, pricing
from labserver.harness.plans.plan import Stage
from labserver.theory.workload import Workload
from labserver.yourapp.patterns import DEPENDENCY, HELD, HOLDS_THREAD, holds_loop, io_ms, stand_in
from labserver.yourapp.verdict import Verdict

if TYPE_CHECKING:  # measure.py imports this module: the server's class is read by type checkers alone
    from labserver.yourapp.measure import AppServer


def stages(server: AppServer, route: protocol.Route, duration_s: int) -> tuple[dict, Stage, Stage]:
    """Where `route`'s endpoint runs (the app's answer), and the stages that price it on `server`: one user, and as
    a run of many users prices it, with as many requests in flight (measurement.hot_users)."""
    where = server.endpoint(route)
    runs_on = where["runs_on"] if where.get("found") else Where.LOOP
    stage = Stage(server, Workload(pattern=stand_in(runs_on), users=1, duration_s=duration_s), route=route)
    many = dataclasses.replace(stage, workload=dataclasses.replace(stage.workload, users=measurement.HOT_MOST))
    return where, stage, many


@contextlib.contextmanager
def _answers(route: protocol.Route) -> Iterator[None]:
    try:
        yield
    except TimeoutError:
        raise client.PricingError(
            f"{route['label']} gave no answer within {client.REQUEST_TIMEOUT_S:.0f} s, so it cannot be priced: "
            "does it wait for something that is not running?"
        ) from None


def first_prices(route: protocol.Route, stage: Stage, many: Stage) -> None:
    """`route`'s first round of prices, on its `stages`, the load generator's on it included where its replies are
    big. Its first requests pay what it builds once (validators, caches, lazy imports): priced and left out, else the
    first route priced on a new server reads up to half dearer than it runs."""
    with _answers(route):
        measurement.measure(stage)
        pricing.one_user(stage)
        pricing.one_user(many)
    pricing.price_generator(many)


def price(server: AppServer, route: protocol.Route, staged: tuple[dict, Stage, Stage]) -> tuple[Verdict, Stage]:
    """`route` priced at one user on `server` (its `stages`), and the stage the model and the sweep read it as: the
    lesser of this pricing and the first round's (first_prices), since a moment's disturbance can make one read half
    dearer; the load generator's on it likewise."""
    where, stage, many = staged
    runs_on = where["runs_on"] if where.get("found") else Where.LOOP
    with _answers(route):
        one = pricing.again(stage)
        busy = pricing.again(many)
    pricing.price_generator(many, again=True)
    hold_ms = math.nan
    if runs_on == Where.LOOP and holds_loop(one):
        runs_on = HELD
    elif runs_on == Where.LOOP and where.get("def_dependencies", 0):
        # a def dependency holds a thread while it runs: for its request's wait (read as a `def`), or for a moment
        hold_ms = thread_hold_ms(server, stage)
        runs_on = runs_on if hold_ms < HOLDS_THREAD * one.service_ms else DEPENDENCY  # NaN: as a `def`
    workload = dataclasses.replace(stage.workload, pattern=stand_in(runs_on), io_ms=io_ms(one))
    stage = dataclasses.replace(stage, workload=workload)
    verdict = Verdict(
        route=route["label"],
        endpoint=where.get("endpoint"),
        runs_on=runs_on,
        def_dependencies=int(where.get("def_dependencies", 0)),
        service_ms=one.service_ms,
        loop_ms=one.loop_ms,
        threads_ms=one.threads_ms,
        predicted_rps=math.nan,
        bound="",
        busy_cpu_ms=busy.worker_ms + busy.pool_ms,
        thread_hold_ms=hold_ms,
    )
    return verdict, stage


def thread_hold_ms(server: AppServer, stage: Stage) -> float:
    """How long one request of `stage`'s route holds a thread of the pool (its `def` dependencies' calls, and any
    other use), in ms: the layer's count of thread-seconds (wrap.CountedLimiter) over lone requests. NaN with several
    workers, whose counts /info does not sum."""
    if server.settings.workers != 1:
        return math.nan
    before = server.info()
    sent = measurement.alone(stage)
    after = server.info()
    if "thread_held_s" not in before or not sent:
        return math.nan
    return (after["thread_held_s"] - before["thread_held_s"]) / sent * 1000
