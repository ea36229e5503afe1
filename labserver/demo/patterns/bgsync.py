"""bgsync: a plain `def` endpoint that hands a plain `def` background task its second wait.

Teaches: FastAPI runs a plain `def` background task in the same thread pool, after the reply is
sent: the request's reply comes after one wait, but its thread is borrowed again for the second,
so the pool serves threads / (2 × io), half what it would without the task.
"""

import time

from fastapi import BackgroundTasks, Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.THREAD_POOL, waits=(Hold.THREAD, Hold.THREAD))  # the reply's wait, then the task's


def afterwards(work: Work) -> None:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # blocks a pool thread, after the reply


def endpoint(background: BackgroundTasks, work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # blocks this thread only
        fib(work.cpu_n)
    background.add_task(afterwards, work)
    return reply("bgsync", work)
