"""An app of one's own, served the lab's way: what uvicorn runs as `labserver.yourapp.wrap:create_app`.

The app named by LAB_APP (`module:attribute`, imported from the folder the lab was started in, as
uvicorn imports it) is wrapped in one ASGI layer that changes nothing it answers:

- every reply names the worker that served it (X-Worker-Pid), and requests in flight are counted,
  as on the demo server (demo/app.py's InFlight);
- where the lab is given a thread limit, it is set once the app has started (else the app's own
  stays, whatever its lifespan set), and each worker samples its gauges (requests in flight,
  thread tokens borrowed and waited for, the event loop's lag) into the run's telemetry folder,
  as the demo's workers do;
- the lab's own paths, under PREFIX, answer its health check, its /info and which endpoint a route
  reaches: where it runs (the event loop or the thread pool) and its `def` dependencies.

The app's own lifespan runs as it would under uvicorn alone.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import urllib.parse
from typing import Any

import anyio.to_thread
from anyio._backends._asyncio import CapacityLimiter, _default_thread_limiter  # the pinned AnyIO's (constraints.txt)

from labserver import config
from labserver.demo import telemetry
from labserver.demo.app import InFlight
from labserver.demo.settings import Settings
from labserver.demo.traits import Where

PREFIX = "/__lab__"  # the lab's own paths: far from any route an app is likely to have
Scope = dict[str, Any]


def load(target: str, folder: str | None = None) -> Any:
    """The ASGI app `target` names (`module:attribute`, the attribute may be dotted), imported from `folder`."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"an app is named module:attribute, as uvicorn takes it (main:app), got {target!r}")
    if folder is not None and folder not in sys.path:
        sys.path.insert(0, folder)
    app: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        if not hasattr(app, part):
            raise ValueError(f"module {module_name!r} has no attribute {attribute!r} (from {target!r})")
        app = getattr(app, part)
    return app


def endpoint_of(app: Any, method: str, path: str) -> dict[str, Any]:
    """Where the route `method path` of a Starlette or FastAPI `app` runs: its endpoint's name, whether FastAPI runs
    it on the event loop (`async def`) or in the thread pool (`def`), by FastAPI's own rule, and how many of its
    dependencies take a thread of the pool too (a `def`, or a `def` with `yield`). Routes under a mounted app are
    found where the mount leads. `found` is False where no route matches, or the app is not Starlette's."""
    scope = {"type": "http", "method": method.upper(), "path": urllib.parse.urlsplit(path).path, "root_path": ""}
    route = _route(app, scope)
    endpoint = getattr(route, "endpoint", None)
    if endpoint is None:
        return {"found": False, "endpoint": None, "runs_on": None, "def_dependencies": 0}
    dependant = getattr(route, "dependant", None)
    calls = [d.call for d in _dependencies(dependant)] if dependant is not None else []
    return {
        "found": True,
        "endpoint": getattr(endpoint, "__qualname__", repr(endpoint)),
        "runs_on": Where.LOOP if _on_loop(endpoint) else Where.THREAD_POOL,
        "def_dependencies": sum(not _on_loop(c) for c in calls if c is not None),
    }


def _route(app: Any, scope: Scope) -> Any:
    """The route of `app` that matches `scope` in full, through any mounted app on the way; None if none does."""
    from starlette.routing import Match

    for route in getattr(app, "routes", []):
        match, child = route.matches(scope)
        if match is not Match.FULL:
            continue
        inner = getattr(route, "app", None)
        if getattr(route, "endpoint", None) is None and hasattr(inner, "routes"):  # a Mount: look inside
            return _route(inner, {**scope, **child})
        return route
    return None


def _dependencies(dependant: Any) -> list[Any]:
    found = []
    for d in getattr(dependant, "dependencies", []):
        found += [d, *_dependencies(d)]
    return found


def _on_loop(call: Any) -> bool:
    """Whether FastAPI runs `call` on the event loop (awaited, or an async generator) rather than in its thread pool:
    FastAPI's own test, which sees through functools.partial and functools.wraps."""
    from fastapi.dependencies.models import _is_async_gen_callable, _is_coroutine_callable

    return _is_coroutine_callable(call) or _is_async_gen_callable(call)


class CountedLimiter(CapacityLimiter):
    """AnyIO's thread limiter, that also sums how long its tokens were held and how often: the thread-seconds the
    app's `def` endpoints and dependencies take, which the pricing reads per request (prices.thread_hold_ms)."""

    __slots__ = ("_since", "held_s", "uses")

    def __init__(self, total_tokens: float):
        super().__init__(total_tokens)
        self.held_s, self.uses = 0.0, 0
        self._since: dict[object, float] = {}

    async def acquire_on_behalf_of(self, borrower: object) -> None:
        await super().acquire_on_behalf_of(borrower)
        self._since[borrower] = time.perf_counter()

    def release_on_behalf_of(self, borrower: object) -> None:
        super().release_on_behalf_of(borrower)
        self.held_s += time.perf_counter() - self._since.pop(borrower, time.perf_counter())
        self.uses += 1


def count_threads() -> CountedLimiter:
    """This event loop's default thread limiter, swapped for a CountedLimiter of as many tokens: run_in_threadpool,
    and so FastAPI, borrow from whatever that default is when they call."""
    counted = CountedLimiter(anyio.to_thread.current_default_thread_limiter().total_tokens)
    _default_thread_limiter.set(counted)
    return counted


class LabLayer:
    """The app, counted and sampled, with the lab's paths beside it (the module's docstring)."""

    def __init__(self, app: Any, settings: Settings):
        self.inner = app
        self.app = InFlight(app)  # counts requests and names the worker, as the demo's
        self.settings = settings
        self.sampler: Any = None
        self.started = False
        self.threads: CountedLimiter | None = None  # the limiter that counts its tokens' hold, once started
        self.gauges = telemetry.Gauges(in_flight=lambda: self.app.in_flight, pool=lambda: None)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await self.inner(scope, receive, self._lifespan_send(send))
        if not self.started:  # an app that has no lifespan: the lab's part starts with the first request
            await self._started()
        if scope["type"] == "http" and scope["path"].startswith(PREFIX + "/"):
            return await self._answer(scope, send)
        return await self.app(scope, receive, send)

    def _lifespan_send(self, send: Any) -> Any:
        async def relay(message: dict) -> None:
            if message["type"] == "lifespan.startup.complete":
                await self._started()
            elif message["type"].startswith("lifespan.shutdown."):
                await telemetry.stop(self.sampler)
                self.sampler = None
            await send(message)

        return relay

    async def _started(self) -> None:
        """Once the app's own startup is done: the lab's thread limit where it was given one (else the app's own
        stays), and this worker's sampling."""
        self.started = True
        threads = config.YOUR_APP_THREADS.read()
        if threads is not None:
            anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        self.threads = count_threads()
        if self.settings.telemetry_dir:
            self.sampler = telemetry.start(self.settings.telemetry_dir, self.gauges)

    async def _answer(self, scope: Scope, send: Any) -> None:
        what = scope["path"][len(PREFIX) + 1 :]
        query = dict(urllib.parse.parse_qsl(scope.get("query_string", b"").decode()))
        if what == "health":
            body: Any = {"status": "ok", "pid": os.getpid()}
        elif what == "info":
            limiter = anyio.to_thread.current_default_thread_limiter()
            body = {"pid": os.getpid(), "workers": self.settings.workers, "threads": int(limiter.total_tokens)}
            body |= self.gauges.read() | {"served": self.app.served}
            if self.threads is not None:  # the thread-seconds taken so far, and how many times a thread was taken
                body |= {"thread_held_s": self.threads.held_s, "thread_uses": self.threads.uses}
        elif what == "route":
            body = endpoint_of(self.inner, query.get("method", "GET"), query.get("path", "/"))
        else:
            return await _reply(send, 404, {"detail": f"no lab path {scope['path']}"})
        await _reply(send, 200, body)


async def _reply(send: Any, status: int, body: Any) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class Bare:
    """The app with nothing of the lab's but its health check, which the launcher waits for: what the layer's cost
    is measured against (`make bench`)."""

    def __init__(self, app: Any):
        self.inner = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == f"{PREFIX}/health":
            return await _reply(send, 200, {"status": "ok", "pid": os.getpid()})
        return await self.inner(scope, receive, send)


def _named_app() -> Any:
    """LAB_APP's app, imported from LAB_APP_DIR (else the current folder), as both factories serve it."""
    folder = config.YOUR_APP_DIR.read()
    return load(config.YOUR_APP.read(), str(folder) if folder else os.getcwd())


def create_bare() -> Bare:
    """uvicorn's factory for the bare app: LAB_APP's app with the health check alone."""
    return Bare(_named_app())


def create_app() -> LabLayer:
    """uvicorn's factory: LAB_APP's app, imported from LAB_APP_DIR, inside the lab's layer."""
    settings = Settings.from_env()
    settings.check()
    return LabLayer(_named_app(), settings)
