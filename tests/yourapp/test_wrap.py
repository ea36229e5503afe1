import os

import pytest
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient

from labserver.demo.settings import Settings
from labserver.paths import ROOT
from labserver.yourapp import wrap


@pytest.fixture(scope="module")
def shop():
    """The shipped example (examples/shop.py), imported as the lab imports it."""
    return wrap.load("examples.shop:app", str(ROOT))


def test_each_route_says_where_its_endpoint_runs(shop):
    assert wrap.endpoint_of(shop, "GET", "/items?limit=3") == {
        "found": True,
        "endpoint": "items",
        "runs_on": "event loop",
        "def_dependencies": 0,
    }
    assert wrap.endpoint_of(shop, "GET", "/report")["runs_on"] == "thread pool"
    assert wrap.endpoint_of(shop, "GET", "/me") == {
        "found": True,
        "endpoint": "me",
        "runs_on": "event loop",
        "def_dependencies": 1,  # current_user, a plain def: FastAPI runs it in the pool
    }
    assert wrap.endpoint_of(shop, "POST", "/orders")["endpoint"] == "place_order"
    assert wrap.endpoint_of(shop, "GET", "/nowhere")["found"] is False
    assert wrap.endpoint_of(shop, "POST", "/items")["found"] is False  # the path, not the method


def test_def_dependencies_are_counted_however_deep():
    app = FastAPI()

    def settings() -> dict:
        return {}

    async def user(s: dict = Depends(settings)) -> str:
        return "me"

    class Limiter:
        async def __call__(self) -> None:
            return None

    @app.get("/me")
    async def me(u: str = Depends(user), _: None = Depends(Limiter())) -> str:
        return u

    assert wrap.endpoint_of(app, "GET", "/me")["def_dependencies"] == 1  # settings; user and Limiter are awaited


def test_the_layer_changes_no_reply_and_names_the_worker(shop, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_APP_THREADS", "7")
    layer = wrap.LabLayer(shop, Settings(procs=0, telemetry_dir=str(tmp_path)))
    with TestClient(layer) as client:
        reply = client.get("/items?limit=2")
        assert reply.json() == [{"id": 0, "in_stock": False}, {"id": 1, "in_stock": True}]
        assert reply.headers["x-worker-pid"] == str(os.getpid())
        assert client.post("/orders", json={"item": "tea"}).status_code == 201
        assert len(client.get("/orders?customer=7").json()) == 1000  # the app's own lifespan filled its database
        assert client.get("/__lab__/health").json()["pid"] == os.getpid()
        info = client.get("/__lab__/info").json()
        assert info["threads"] == 7  # the lab's thread limit, set once the app started
        assert info["served"] == 3  # the app's requests, not the lab's own
        assert client.get("/__lab__/route", params={"path": "/report"}).json()["runs_on"] == "thread pool"
        assert client.get("/__lab__/nothing").status_code == 404
        assert layer.sampler is not None and not layer.sampler.done()  # the worker samples its gauges meanwhile
    assert layer.sampler is None  # ... until the app stops


def test_an_app_is_loaded_as_uvicorn_names_it(tmp_path):
    (tmp_path / "mine.py").write_text("class Box:\n    app = 'the app'\n")
    assert wrap.load("mine:Box.app", str(tmp_path)) == "the app"
    for target, says in [("mine", "module:attribute"), ("mine:nothing", "no attribute")]:
        try:
            wrap.load(target, str(tmp_path))
        except ValueError as e:
            assert says in str(e)
        else:
            raise AssertionError(f"{target} loaded")


def test_fastapis_own_rule_sees_through_partials_wrappers_and_mounts():
    import functools

    app, sub = FastAPI(), FastAPI()

    async def fetch(n: int = 1) -> int:
        return n

    def logged(f):
        @functools.wraps(f)
        def call(*a, **k):
            return f(*a, **k)

        return call

    def sync_gen():
        yield 1

    @sub.get("/wrapped")
    @logged
    async def wrapped(_: int = Depends(sync_gen)) -> int:
        return 1

    @sub.get("/blocking")
    def blocking() -> int:
        return 1

    app.add_api_route("/partial", functools.partial(fetch, n=2))
    app.mount("/v1", sub)
    assert wrap.endpoint_of(app, "GET", "/partial")["runs_on"] == "event loop"
    inside = wrap.endpoint_of(app, "GET", "/v1/wrapped")
    assert inside["found"] and inside["runs_on"] == "event loop"  # FastAPI awaits what functools.wraps wraps
    assert inside["def_dependencies"] == 1  # a def with yield runs in the pool too
    assert wrap.endpoint_of(app, "GET", "/v1/blocking")["runs_on"] == "thread pool"


def test_without_a_limit_of_the_labs_the_apps_own_stays(tmp_path, monkeypatch):
    from contextlib import asynccontextmanager

    import anyio.to_thread

    @asynccontextmanager
    async def lifespan(app):
        anyio.to_thread.current_default_thread_limiter().total_tokens = 100  # as the decision card advises
        yield

    app = FastAPI(lifespan=lifespan)
    monkeypatch.delenv("LAB_APP_THREADS", raising=False)
    with TestClient(wrap.LabLayer(app, Settings(procs=0))) as client:
        assert client.get("/__lab__/info").json()["threads"] == 100


def test_the_layers_thread_limiter_counts_each_hold_and_keeps_the_tokens():
    import time

    import anyio
    import anyio.to_thread

    from labserver.yourapp.wrap import count_threads

    async def main() -> tuple:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 7  # an app's own limit, set in its lifespan
        counted = count_threads()
        assert anyio.to_thread.current_default_thread_limiter() is counted  # what FastAPI's threads now borrow
        await anyio.to_thread.run_sync(time.sleep, 0.01)
        await anyio.to_thread.run_sync(time.sleep, 0)
        return counted.total_tokens, counted.uses, counted.held_s, counted.borrowed_tokens

    tokens, uses, held_s, borrowed = anyio.run(main)
    assert tokens == 7 and uses == 2 and held_s > 0 and borrowed == 0
