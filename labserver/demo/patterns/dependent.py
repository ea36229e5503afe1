"""dependent: `async def`, each sub-task awaited in turn because it needs the previous result.

Teaches: dependent awaits cannot be gathered. Sub-task k cannot start before k − 1 has
answered, so a request takes tasks × io_ms however it is written, like `sequential`.
"""

import asyncio

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib


async def subtask(work: Work, previous: int) -> int:
    await asyncio.sleep(work.io_s)
    return previous + fib(work.cpu_n)


TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,))  # like sequential: each await needs the one before


async def endpoint(work: Work = Depends(work_query)) -> dict:
    result = 0
    for _ in range(work.tasks):
        result = await subtask(work, result)  # the input of the next one: nothing to overlap
    return reply("dependent", work)
