"""/health, /info and the X-Worker-Pid header, through FastAPI's TestClient."""

import os

import pytest
from fastapi.testclient import TestClient

from labserver.demo.app import GC_THRESHOLD0, create_app
from labserver.demo.patterns import PATTERNS
from labserver.demo.settings import Settings


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(workers=1, threads=7, procs=1))) as client:
        yield client


def test_health(client):
    r = client.get("/health")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "pid": os.getpid()}


def test_info_reports_the_settings_in_use(client):
    info = client.get("/info").json()
    assert info["pid"] == os.getpid()
    assert info["workers"] == 1
    assert info["threads"] == 7  # the lifespan resized AnyIO's thread pool
    assert info["threads_busy"] == 0
    assert info["procs"] == 1
    assert info["patterns"] == list(PATTERNS)


def test_info_counts_requests(client):
    before = client.get("/info").json()
    assert before["in_flight"] == 1  # the /info request itself
    client.get("/gather")
    client.get("/sequential")
    after = client.get("/info").json()
    assert after["served"] == before["served"] + 3  # the two pattern calls and the first /info
    assert after["in_flight"] == 1


@pytest.mark.parametrize("path", ["/health", "/info", "/threadpool", "/gather?tasks=0", "/missing"])
def test_every_response_names_its_worker(client, path):
    assert client.get(path).headers["x-worker-pid"] == str(os.getpid())


def test_create_app_checks_its_settings():
    with pytest.raises(ValueError, match="threads"):
        create_app(Settings(threads=0))


def test_create_app_reads_settings_from_the_environment(monkeypatch):
    monkeypatch.setenv("LAB_WORKERS", "1")
    monkeypatch.setenv("LAB_THREADS", "3")
    monkeypatch.setenv("LAB_PROCS", "0")
    with TestClient(create_app()) as client:
        info = client.get("/info").json()
    assert (info["threads"], info["procs"]) == (3, 0)


def test_openapi_lists_every_pattern_with_its_summary(client):
    paths = client.get("/openapi.json").json()["paths"]
    for name in PATTERNS:
        assert paths[f"/{name}"]["get"]["summary"].startswith(name)


def test_startup_quiets_the_garbage_collector():
    # A full collection walking FastAPI's and pydantic's start-up objects paused every request for
    # tens of ms; the lifespan moves them out of the collector's reach, and makes the young passes,
    # which walked the requests in flight to free nothing, rare.
    import gc

    threshold = gc.get_threshold()
    gc.unfreeze()
    try:
        with TestClient(create_app(Settings(workers=1, threads=2, procs=0))):
            assert gc.get_freeze_count() > 0
            assert gc.get_threshold() == (GC_THRESHOLD0, *threshold[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.parametrize("value", ["5%0B", "%205", "5.0", "1e2", "abc"])
def test_a_number_must_be_written_with_digits_only(client, value):
    r = client.get(f"/sequential?io_ms={value}")
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "io_ms"]
    assert "digits only" in r.json()["detail"][0]["msg"]
