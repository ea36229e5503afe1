"""What moves a route's ceiling: the change `advice` proposes by the resource that binds it, and the model's
throughput once the change is made, priced from the same one-user prices as the prediction (`predict`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from labserver.demo.traits import Where
from labserver.harness.load import pricing
from labserver.harness.plans.plan import Options, Stage
from labserver.theory.workload import Workload
from labserver.yourapp.patterns import HELD, STAND_IN
from labserver.yourapp.resources import Resource, named, words
from labserver.yourapp.verdict import Priced


def predict(stage: Stage, users: int) -> tuple[float, str]:
    """The model's throughput at `users` and what binds it, from the one-user prices alone: the prediction each run
    of the sweep is given before it starts (pricing.foresee, the load generator priced where it decides it)."""
    at = dataclasses.replace(stage, workload=dataclasses.replace(stage.workload, users=users))
    p = pricing.foresee(at, Options()).prediction
    return p.rps, p.bottleneck


@dataclass(frozen=True)
class Advice:
    """What moves a route's ceiling, and what the model predicts once it is done (NaN: no figure to give)."""

    change: str
    rps: float
    settings: dict[str, int] = field(default_factory=dict)  # the server's settings it changes (none: a code change)


def advice(priced: Priced, users: int) -> Advice:
    """The change that moves the ceiling of the route the model read as `priced`, by the resource that binds it at
    `users`, with the model's throughput once it is made, from the same one-user prices."""
    v, stage = priced.verdict, priced.stage
    settings, work, cores = stage.server.settings, stage.workload, stage.server.cores()
    resource = named(v.bound)

    def then(workload: Workload = work, at_users: int = users, **changed: Any) -> float:
        # priced as a run on the changed server is priced before it starts: the cores the machine shares with the
        # load generator included, and the generator measured where it decides the figure
        at = dataclasses.replace(stage, workload=dataclasses.replace(workload, users=at_users))
        return pricing.foresee(at, Options(), settings=dataclasses.replace(settings, **changed)).prediction.rps

    if v.runs_on == HELD:
        rps = then(dataclasses.replace(work, pattern=STAND_IN[Where.THREAD_POOL]))
        return Advice("await an async call instead of the blocking one, or make the endpoint a plain `def` "
                      f"(FastAPI then runs it in a thread): as a `def`, {rps:,.0f} req/s", rps)  # fmt: skip
    if resource is Resource.THREADS:
        more = 2 * settings.threads
        rps = then(threads=more)
        change = (
            f"where threads, not a connection pool, are the scarcer slot (lesson 11): raise the thread limit to "
            f"{more} (`total_tokens` in the lifespan; here `--threads {more}`), or await an async driver in "
            f"`async def`: with {more} threads, {rps:,.0f} req/s"
        )
        return Advice(change, rps, {"threads": more})
    if resource in (Resource.LOOP, Resource.WORKER) and math.floor(cores) > settings.workers:
        workers = math.floor(cores)
        rps = then(workers=workers)
        # the CPU may be the endpoint's own work, which a process pool can take, or FastAPI checking and serialising
        # a big reply after it returns, which no pool can take: the lab cannot tell them apart, so it names both
        change = (
            f"run {workers} workers (`--workers {workers}`, one a core), or take the CPU off the loop: the endpoint's "
            "own computing to a process pool, but FastAPI's checking and serialising of a big reply only by making it "
            f"smaller or caching it: with {workers} workers, {rps:,.0f} req/s"
        )
        return Advice(change, rps, {"workers": workers})
    if resource is Resource.USERS:
        more = 2 * users
        rps = then(at_users=more)
        bound = predict(dataclasses.replace(stage, workload=dataclasses.replace(work, users=more)), more)[1]
        change = f"no change needed: the users bind it; at {more} users, {rps:,.0f} req/s, bound by {words(bound)}"
        return Advice(change, rps)
    return Advice("less CPU per request, or more cores: every core this server may use is busy", math.nan)
