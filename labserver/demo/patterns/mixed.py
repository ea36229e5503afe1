"""mixed (anti-pattern): `async def` that awaits one call and then makes a blocking one.

Teaches: one blocking call is enough. Each sub-task awaits io_ms (the loop is free) and then
sleeps io_ms with `time.sleep` (the loop is held), as in Carlos Pena's mixed endpoint: the awaited
half overlaps, the blocking half does not, so a worker still serves at most one request per
tasks × io_ms, like `blocking`, and each request takes twice as long.
"""

import asyncio
import time

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING, Hold.LOOP))  # an awaited io_ms, then a blocking one


async def endpoint(work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        await asyncio.sleep(work.io_s)  # the loop serves others meanwhile
        time.sleep(work.io_s)  # the mistake: the loop serves nobody meanwhile
        fib(work.cpu_n)
    return reply("mixed", work)
