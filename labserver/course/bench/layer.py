"""What the lab's ASGI layer costs an app of one's own: the example's routes that compute, with it and without it.

`python -m labserver measure` serves an app inside the lab's layer (yourapp/wrap.py): it counts
requests in flight, names the worker in each reply and samples the thread pool and the event loop.
"Off" is the same app behind wrap.Bare, which answers the launcher's health check and adds nothing
else. The example's `GET /catalog` keeps the worker's core busy, so a cost per request shows in
full in its throughput (a route that waits would hide it in its wait). It runs on both in mirrored
rounds (off, on | on, off | …), a new pair of servers each round, so that the machine's drift and
each process's own speed fall on both alike; each round's cost is 1 − on / off, and the target
holds their median. Beside it, the layer's own time per request, in process: a trivial endpoint
called through the layer and through the bare one thousands of times, with no network and no
Locust, for what the rounds' noise can hide.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from labserver.course.bench.live_view import MODES, rounds
from labserver.course.bench.measure import quiet, ready_s
from labserver.demo.traits import Where
from labserver.harness.load.run import run_plan
from labserver.harness.plans.plan import Run
from labserver.harness.servers.launcher import running
from labserver.paths import ROOT
from labserver.yourapp import routes
from labserver.yourapp.measure import AppServer
from labserver.yourapp.patterns import STAND_IN

APP = "examples.shop:app"
# The route with users enough to keep the worker's core busy, and the pattern the model reads it as
ROUTES = (("GET /catalog", 8, STAND_IN[Where.LOOP]),)
ROUNDS = 8  # a round's noise is larger than the cost it measures; the median of eight is much less so
CALLS = 20_000  # in-process calls per try of the per-request cost


class BareServer(AppServer):
    """The app behind wrap.Bare: its own thread limit, no gauges, no worker named in its replies."""

    app = "labserver.yourapp.wrap:create_bare"

    def start(self) -> BareServer:
        super(AppServer, self).start()  # the bare app has no /info to read its thread limit from
        return self


def layer_cost(duration_s: int, ready: list[float]) -> dict:
    """ROUNDS mirrored rounds of each route on the layered and the bare server, a new pair of servers each round (a
    process's own speed differs from another's by a few percent, for the whole of its life): each route's rounds and
    median cost, and the layer's time per request in process."""
    out: dict[str, Any] = {"what": f"{APP}, {ROUNDS} mirrored rounds a route, {duration_s} s each", "routes": []}
    for text, users, pattern in ROUTES:
        route = routes.parse(text, {}, ROOT)
        rows = []
        for r in range(ROUNDS):
            order = MODES if r % 2 == 0 else MODES[::-1]
            with running([BareServer(APP, folder=ROOT), AppServer(APP, folder=ROOT)]) as (off, on):
                ready += [ready_s(off), ready_s(on)]
                servers = dict(zip(MODES, (off, on), strict=True))
                plan = [Run(pattern=pattern, users=users, io_ms=0, route=route, server=servers[mode]) for mode in order]
                quiet()
                done = run_plan(off, plan, duration_s=duration_s, lesson="bench", progress=False)
            rows += [{**d.row, "mode": mode, "round": r} for d, mode in zip(done, order, strict=True)]
        each = {"route": text, "users": users, **rounds(rows)}
        print(
            f"  layer, {text} × {users}: median cost {each['cost']:+.2%} "
            f"(rounds {each['cost_min']:+.2%} to {each['cost_max']:+.2%})"
        )
        out["routes"].append(each)
    out["cost"] = max((r["cost"] for r in out["routes"]), default=float("nan"))
    out["valid"] = all(r["off_valid"] and r["on_valid"] for r in out["routes"])
    out["median_rps"] = {r["route"]: statistics.median(x["off_rps"] for x in r["rounds"]) for r in out["routes"]}
    out["per_request_us"] = per_request_us()
    print(f"  layer, in process: {out['per_request_us']:+.2f} µs a request over the bare app's")
    return out


def per_request_us() -> float:
    """The layer's own time per request over the bare one's, in µs: a trivial FastAPI endpoint called through each,
    CALLS times, three tries in turn, the least of each (the least disturbed)."""
    from fastapi import FastAPI

    from labserver.demo.settings import Settings
    from labserver.yourapp import wrap

    app = FastAPI()

    @app.get("/x")
    async def x() -> dict:
        return {"a": 1}

    layer, bare = wrap.LabLayer(app, Settings(procs=0)), wrap.Bare(app)
    layer.started = True  # no thread limit to set, no sampler: the per-request path alone
    scope: dict[str, Any] = dict(
        type="http", method="GET", path="/x", raw_path=b"/x", query_string=b"", headers=[], root_path="",
        scheme="http", http_version="1.1", asgi={"version": "3.0"},
    )  # fmt: skip

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_: dict) -> None:
        return None

    async def timed(app_: Any) -> float:
        started = time.perf_counter()
        for _ in range(CALLS):
            await app_(dict(scope), receive, send)
        return (time.perf_counter() - started) / CALLS * 1e6

    async def tries() -> tuple[list[float], list[float]]:
        on, off = [], []
        for _ in range(3):
            off.append(await timed(bare))
            on.append(await timed(layer))
        return on, off

    on, off = asyncio.run(tries())
    return min(on) - min(off)
