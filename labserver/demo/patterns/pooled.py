"""pooled: a plain `def` endpoint whose `yield` dependency takes a pooled connection before its `yield`.

Teaches: FastAPI runs the dependency and the endpoint in two turns in the thread pool, and in
between the request holds its connection and no thread. Once the requests waiting in the
dependency for a connection hold every thread, those holding the connections wait for a thread
to run their endpoint: nothing moves until the pool's timeout. It takes requests in flight of
threads + connections. A session that connects at its first query (SQLAlchemy's) takes its
connection in the endpoint's turn instead, and cannot stall so.
"""

import time
from collections.abc import Iterator

from fastapi import Depends, Request

from labserver.demo.connections import borrowed
from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.THREAD_POOL, waits=(Hold.THREAD,), connection=True)  # a thread, and a connection


def session(request: Request) -> Iterator[int]:
    with borrowed(request.app.state.connections) as connection:  # in one turn in the thread pool
        yield connection  # the endpoint runs in another


def endpoint(connection: int = Depends(session), work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # the query: holds this thread and the connection
        fib(work.cpu_n)
    return reply("pooled", work)
