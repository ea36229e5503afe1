"""Load shedding: a worker turns a request away at once, with 503 and Retry-After, when its queue is full.

A server that accepts every request under overload lets its queue, and so every request's
latency, grow for as long as the overload lasts (lesson 08). One that bounds the queue keeps the
latency of what it accepts bounded and tells the rest to come back later: the cheapest request
to serve is the one refused before it costs anything. Here the queue is the thread pool's
waiting line (AnyIO's limiter: `def` endpoints wait there for one of `threads` tokens), and
`max_waiting` is its length q, the `queue_limit` setting: with c threads the worker then holds
at most K = c + q requests, an M/·/c/K queue (theory/queueing.py).

The lab's own routes (/health, /info) are never shed: the harness needs them most under load.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio.to_thread

RETRY_AFTER_S = 1
NEVER_SHED = ("/health", "/info")


def threads_queue() -> tuple[int, int]:
    """(threads free, tasks waiting for one) of AnyIO's default thread limiter in this worker."""
    stats = anyio.to_thread.current_default_thread_limiter().statistics()
    return int(stats.total_tokens - stats.borrowed_tokens), stats.tasks_waiting


class Shed:
    """ASGI middleware: 503 at once for a request that would wait behind `max_waiting` others."""

    def __init__(self, app, max_waiting: int, queue: Callable[[], tuple[int, int]] | None = None):
        self.app = app
        self.max_waiting = max_waiting
        self.queue = queue  # None: this worker's thread pool (threads_queue)
        self.shed = 0  # requests turned away, for /info

    def full(self) -> bool:
        free, waiting = (self.queue or threads_queue)()
        return free <= 0 and waiting >= self.max_waiting  # it would wait, and q already do

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in NEVER_SHED or not self.full():
            return await self.app(scope, receive, send)
        self.shed += 1
        body = (
            b'{"detail":"overloaded: the queue for a thread is full (queue_limit);'
            b" retry after " + str(RETRY_AFTER_S).encode() + b' s"}'
        )
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(RETRY_AFTER_S).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
