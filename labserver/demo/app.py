"""The demo FastAPI app: one route per pattern, plus /health and /info.

Run by uvicorn as `labserver.demo.app:create_app` with `--factory`; settings arrive through
the environment (see settings.py) so that every `--workers` process sees the same ones.
"""

from __future__ import annotations

import gc
import importlib.metadata
import inspect
import multiprocessing
import os
import signal
import sys
import sysconfig
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig

from labserver.demo import connections, subinterpreters, telemetry
from labserver.demo.calls import CLIENT_CONNECTIONS, IDLE_S
from labserver.demo.cpus import pin, usable_cpus
from labserver.demo.lifeline import die_with_parent
from labserver.demo.patterns import PATTERNS
from labserver.demo.settings import Settings
from labserver.demo.shed import Shed

# What /info and the routes mean, as a number: a harness measures a server it did not start
# (labserver/harness/servers/remote.py) only if both speak the same one. Raise it when a route, a query
# parameter or an /info field the harness reads changes meaning.
PROTOCOL = 1
try:
    VERSION = importlib.metadata.version("concurrency-lab")
except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
    VERSION = "unknown"


def _boot_id() -> str | None:
    """This running kernel's id (Linux): equal on both ends only when the harness and the server share a machine."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


BOOT_ID = _boot_id()
NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}
# Python collects its youngest objects every 700 net allocations. Under load that count keeps
# reaching 700 by chance while nothing is garbage: the server runs dozens of passes a second, each
# walking the live objects of the requests in flight and freeing none (its requests leave no
# cyclic garbage: gc.DEBUG_SAVEALL keeps none), a share of its time in pauses (docs/evidence.md).
# Cyclic garbage is still collected, once 100,000 objects have piled up.
GC_THRESHOLD0 = 100_000


class InFlight:
    """ASGI middleware: counts requests in flight and served, and names the worker in a header."""

    def __init__(self, app):
        self.app = app
        self.in_flight = 0
        self.served = 0
        self.pid_header = (b"x-worker-pid", str(os.getpid()).encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_pid(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), self.pid_header]
            await send(message)

        self.in_flight += 1
        try:
            await self.app(scope, receive, send_with_pid)
        finally:
            self.in_flight -= 1
            self.served += 1


def _start_pool(procs: int) -> telemetry.CountingPool | None:
    if procs == 0:
        return None
    # spawn, not fork: a forked child would inherit uvicorn's listening socket and signal
    # handlers, and keep the port busy if it outlived the server.
    # initargs: a child whose worker died before it asked for the signal exits at once
    # it counts its tasks, so that /info and the telemetry can say how many run and how many wait
    pool = telemetry.CountingPool(
        procs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(signal.SIGTERM, os.getpid()),
    )
    # Start every worker now, so that the first measured requests do not pay for it, but do not
    # wait for them: they import in the background while uvicorn finishes starting and Locust
    # starts (~0.7 s), instead of adding ~0.5 s to every server's start-up.
    for _ in range(procs):
        pool.submit(abs, 0)  # each submit with no idle worker spawns one (spawn context)
    return pool


@asynccontextmanager
async def lifespan(app: FastAPI):
    settings: Settings = app.state.settings
    anyio.to_thread.current_default_thread_limiter().total_tokens = settings.threads
    app.state.pool = _start_pool(settings.procs)
    # lesson 12: one client for every call to the other service (calls.py)
    reused = httpx.Limits(
        max_connections=CLIENT_CONNECTIONS, max_keepalive_connections=CLIENT_CONNECTIONS, keepalive_expiry=IDLE_S
    )
    app.state.client = httpx.AsyncClient(base_url=settings.upstream, limits=reused) if settings.upstream else None
    # Everything imported and built so far lives as long as the server: keep it out of the garbage
    # collector's full passes, which would otherwise walk it all (tens of ms with FastAPI and
    # pydantic loaded) while every request waits.
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD0, *gc.get_threshold()[1:])
    # With several workers, each posts its CPU seconds for whichever answers /info; one answers for itself.
    cpu = (lambda: telemetry.cpu_seconds(app.state.pool)) if settings.workers > 1 else None
    sampler = telemetry.start(settings.telemetry_dir, app.state.gauges, cpu) if settings.telemetry_dir else None
    try:
        yield
    finally:
        await telemetry.stop(sampler)
        if app.state.pool is not None:
            # wait=True: a pool left running would outlive uvicorn and hold its port.
            app.state.pool.shutdown(wait=True, cancel_futures=True)
        app.state.interpreters.shutdown()
        if app.state.client is not None:
            await app.state.client.aclose()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    settings.check()
    if settings.cpus:  # before any thread or pool starts: they inherit it
        pin(settings.cpus)
    # FastAPI's built-in OpenTelemetry asks on every request whether a provider is configured; the
    # lab exports none (it samples its own, telemetry.py), so it is switched off: ~5% of the server's
    # CPU per request.
    app = FastAPI(title="Concurrency Lab demo server", lifespan=lifespan, telemetry=NO_TELEMETRY)
    app.state.settings = settings
    app.state.pool = None
    app.state.client = None
    app.state.interpreters = subinterpreters.LazyPool(settings.procs)  # started by its first request
    app.state.connections = connections.pool(settings.db_pool)  # lesson 11's pooled sessions
    if settings.queue_limit is not None:  # added first: it runs inside InFlight, so a 503 is counted and named
        app.add_middleware(Shed, max_waiting=settings.queue_limit)
    app.add_middleware(InFlight)  # Starlette builds the instance; /info finds it in the middleware stack
    # how long the database routes hold a pooled connection (shop.py), for the telemetry to sample
    app.state.db_held = telemetry.HoldMeter() if settings.database_url else None
    app.state.gauges = telemetry.Gauges(
        in_flight=lambda: _in_flight(app), pool=lambda: app.state.pool, held=lambda: app.state.db_held
    )

    _add_patterns(app)
    if settings.database_url:  # lesson 07's routes; their lifespan opens and closes the psycopg pools
        from labserver.demo.shop import router as db_router

        app.include_router(db_router)

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "pid": os.getpid()}

    @app.get("/info")
    async def info() -> dict:
        limiter = anyio.to_thread.current_default_thread_limiter()
        middleware = _in_flight_counter(app)
        return {
            "protocol": PROTOCOL,
            "version": VERSION,
            "boot_id": BOOT_ID,  # whether a harness shares this machine (and so its CPUs) with the server
            "pid": os.getpid(),
            "workers": settings.workers,
            "threads": int(limiter.total_tokens),
            "procs": settings.procs,
            "queue_limit": settings.queue_limit,
            "cpus": usable_cpus(),
            # lesson 10: the interpreter, and whether its threads share one GIL now (an import can turn it on)
            "python": sys.version.split()[0],
            "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
            "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
            # in_flight, threads_busy and _waiting, pool_running and _queued, db_held_s and db_uses:
            # what the telemetry samples
            **app.state.gauges.read(),
            "served": middleware.served if middleware else None,
            "patterns": list(PATTERNS),
            "cpu": _cpu(app),
        }

    return app


def _add_patterns(app: FastAPI) -> None:
    """One GET route per pattern module, summarised by its docstring's first line."""
    for name, endpoint in PATTERNS.items():
        doc = sys.modules[endpoint.__module__].__doc__
        assert doc, f"{endpoint.__module__} needs a docstring: its first line is the route's summary"
        summary = doc.splitlines()[0]
        # response_model=None for a `def` endpoint: FastAPI would otherwise validate its return value
        # with a second trip through the thread pool, queueing behind new requests under load. An
        # `async def` one keeps the model FastAPI infers from `-> dict`: validated in place and
        # serialised by pydantic-core, ~100 fewer Python calls per request than jsonable_encoder
        # (about 15% of the server's CPU per request).
        plain: dict[str, Any] = {} if inspect.iscoroutinefunction(endpoint) else {"response_model": None}
        # what else it may answer, in the OpenAPI: a stream's media type, a refusal this server's make-up causes
        responses = getattr(sys.modules[endpoint.__module__], "RESPONSES", None)
        app.add_api_route(
            f"/{name}", endpoint, methods=["GET"], name=name, summary=summary, responses=responses, **plain
        )


def _cpu(app: FastAPI) -> dict:
    """The server's CPU seconds so far, per process, for a harness on another machine (psutil cannot see it).

    `time` is this machine's clock now, for the harness to place each entry's `t` on its own.
    This worker's entries are read now; the other workers' are their latest posts (every 100 ms).
    """
    settings: Settings = app.state.settings
    entries = telemetry.cpu_seconds(app.state.pool)
    if settings.workers > 1 and settings.telemetry_dir:
        entries += telemetry.read_board(settings.telemetry_dir, skip=os.getpid())
    return {"time": round(time.time(), 4), "processes": entries}


def _in_flight_counter(app: FastAPI) -> InFlight | None:
    stack = app.middleware_stack
    while stack is not None and not isinstance(stack, InFlight):
        stack = getattr(stack, "app", None)
    return stack


def _in_flight(app: FastAPI) -> int | None:
    middleware = _in_flight_counter(app)
    return middleware.in_flight if middleware else None
