"""gathertimeout: `asyncio.gather` over a request's sub-tasks, one of them a call that times out.

Teaches: when one awaitable of `gather` raises (here `asyncio.timeout`'s TimeoutError), gather
raises at once and the endpoint answers, 504. The other sub-tasks are not cancelled: each goes
on to its end, fib included, for an answer already sent.
"""

import asyncio

from fastapi import Depends

from labserver.demo import hung
from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work

RESPONSES = hung.RESPONSES
TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,), overlaps=True)  # as gather: its waits overlap


async def endpoint(work: Work = Depends(work_query)) -> dict:
    try:
        await asyncio.gather(hung.hung_call(work), *(hung.sub_task(work) for _ in range(work.tasks - 1)))
    except TimeoutError:
        raise hung.gave_up() from None  # the others run on: nothing cancels them
    return reply("gathertimeout", work)
