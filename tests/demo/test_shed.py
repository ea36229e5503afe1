"""Load shedding turns a request away only when the queue for a thread is full."""

import asyncio

from labserver.demo.shed import NEVER_SHED, Shed


async def _ok(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _call(app, path: str = "/threadpool") -> list[dict]:
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    asyncio.run(app({"type": "http", "path": path}, receive, send))
    return sent


def test_below_the_limit_every_request_passes():
    app = Shed(_ok, max_waiting=3, queue=lambda: (0, 2))
    assert _call(app)[0]["status"] == 200 and app.shed == 0


def test_at_the_limit_a_request_gets_503_with_retry_after_at_once():
    app = Shed(_ok, max_waiting=3, queue=lambda: (0, 3))
    start, body = _call(app)
    assert start["status"] == 503
    headers = dict(start["headers"])
    assert headers[b"retry-after"] == b"1" and int(headers[b"content-length"]) == len(body["body"])
    assert b"queue_limit" in body["body"] and app.shed == 1


def test_a_limit_of_zero_sheds_whatever_would_wait_and_nothing_else():
    assert _call(Shed(_ok, max_waiting=0, queue=lambda: (0, 0)))[0]["status"] == 503  # every thread busy
    assert _call(Shed(_ok, max_waiting=0, queue=lambda: (1, 0)))[0]["status"] == 200  # one free
    assert _call(Shed(_ok, max_waiting=1, queue=lambda: (0, 0)))[0]["status"] == 200


def test_the_labs_own_routes_are_never_shed():
    app = Shed(_ok, max_waiting=0, queue=lambda: (0, 100))
    for path in NEVER_SHED:
        assert _call(app, path)[0]["status"] == 200
