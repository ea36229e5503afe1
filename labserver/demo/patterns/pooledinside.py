"""pooledinside: a plain `def` endpoint that borrows its pooled connection itself, in its own turn in the thread pool.

Teaches: the fix for `pooled`'s stall. The request takes the connection and uses it in the
same thread, so whoever holds a connection holds a thread too, and the pool bounds the endpoint
at connections / hold, with no gap to deadlock in.
"""

import time

from fastapi import Depends, Request

from labserver.demo.connections import borrowed
from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.THREAD_POOL, waits=(Hold.THREAD,), connection=True)  # a thread, and a connection


def endpoint(request: Request, work: Work = Depends(work_query)) -> dict:
    with borrowed(request.app.state.connections):  # in this endpoint's own turn in the thread pool
        for _ in range(work.tasks):
            time.sleep(work.io_s)  # the query: holds this thread and the connection
            fib(work.cpu_n)
    return reply("pooledinside", work)
