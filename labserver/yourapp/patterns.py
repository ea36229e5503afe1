"""How the model reads a route of one's own: as the demo's pattern with the same traits, by where its endpoint runs
(`STAND_IN`: an `async def` endpoint as `sequential`, a `def` one as `threadpool`, one that holds the event loop while
it waits as `blocking`), with the part of its time alone S that is not the server's CPU or the client's as the
pattern's `io_ms`.
"""

from __future__ import annotations

from labserver.demo.traits import Where
from labserver.theory.demand import OneUser

# How the model reads a route, by where its endpoint runs: the demo pattern with the same traits
HELD = "event loop, held while it waits"  # an `async def` route whose wait blocks: a sync call inside it
# an `async def` route with a plain `def` dependency: FastAPI runs the dependency in the thread pool, and its
# thread is held while it waits; the model reads the whole request as holding one (at most what it holds)
DEPENDENCY = "event loop, its def dependency in the thread pool"
STAND_IN = {Where.LOOP: "sequential", Where.THREAD_POOL: "threadpool", HELD: "blocking", DEPENDENCY: "threadpool"}
# Requests priced back to back (measurement.HOT_USERS of them) that took this many times S or more took turns: where
# the route's CPU is under half of S, what they took turns for is its wait, which holds the loop
IN_TURN = 1.5
# an `async def`'s `def` dependencies that hold a thread for this share of S or more are read as holding it for all of
# S (as a `def` endpoint holds one); under it, for a moment that binds nothing
HOLDS_THREAD = 0.5


def stand_in(runs_on: str | None) -> str:
    """The demo pattern the model reads a route as; an app that is not Starlette's is read as `async def`."""
    return STAND_IN.get(runs_on or Where.LOOP, "sequential")


def io_ms(one: OneUser) -> int:
    """The part of S that is neither the server's CPU nor the client's: what the route waits for, as the model's
    `io_ms`. The client's is the load generator's in a run, which the model adds to each round trip: a reply of a
    megabyte costs a client a few ms to read, which S holds too."""
    return max(0, round(one.service_ms - one.worker_ms - one.pool_ms - one.client_ms))


def holds_loop(one: OneUser) -> bool:
    """Whether an `async def` route holds the event loop while it waits (a blocking call inside it): its requests
    priced back to back took turns, though its CPU is under half of S."""
    return one.busy_ms >= IN_TURN * one.service_ms and one.worker_ms < one.service_ms / 2
