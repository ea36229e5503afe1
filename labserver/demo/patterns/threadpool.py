"""threadpool: a plain `def` endpoint, which FastAPI runs in AnyIO's thread pool.

Teaches: blocking code is fine while a thread is free; once all of them (40 by default)
are busy, requests queue. CPU work gains nothing: the GIL lets one thread compute at a time.
"""

import time

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.THREAD_POOL, waits=(Hold.THREAD,))  # a plain `def`: the whole request in one pool thread


def endpoint(work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # blocks this thread only
        fib(work.cpu_n)
    return reply("threadpool", work)
