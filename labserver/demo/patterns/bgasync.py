"""bgasync: a plain `def` endpoint that hands an `async def` background task its second wait.

Teaches: an `async def` background task runs on the event loop after the reply and awaits its
wait: it holds no thread, so the pool serves threads / io, as it would without the task.
"""

import asyncio
import time

from fastapi import BackgroundTasks, Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.THREAD_POOL, waits=(Hold.THREAD,))  # the reply's wait; the task's holds nothing


async def afterwards(work: Work) -> None:
    for _ in range(work.tasks):
        await asyncio.sleep(work.io_s)  # the event loop serves other requests meanwhile


def endpoint(background: BackgroundTasks, work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # blocks this thread only
        fib(work.cpu_n)
    background.add_task(afterwards, work)
    return reply("bgasync", work)
