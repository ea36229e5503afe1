"""gather: `async def`, all sub-tasks started at once with `asyncio.gather`.

Teaches: independent awaits overlap, so a request takes one io_ms instead of tasks × io_ms.
"""

import asyncio

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib


async def subtask(work: Work) -> int:
    await asyncio.sleep(work.io_s)
    return fib(work.cpu_n)


TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,), overlaps=True)  # independent: started at once


async def endpoint(work: Work = Depends(work_query)) -> dict:
    await asyncio.gather(*(subtask(work) for _ in range(work.tasks)))
    return reply("gather", work)
