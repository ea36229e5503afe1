"""taskgroup: `asyncio.TaskGroup` over a request's sub-tasks, one of them a call that times out.

Teaches: the fix for `gathertimeout`. When one task of a TaskGroup fails, the group cancels the
others at their next `await`, waits for them, and raises the failure in an ExceptionGroup
(`except*` takes it apart). The endpoint answers 504 as before, and no sub-task runs past it.
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
        async with asyncio.TaskGroup() as group:
            group.create_task(hung.hung_call(work))
            for _ in range(work.tasks - 1):
                group.create_task(hung.sub_task(work))
    except* TimeoutError:
        raise hung.gave_up() from None  # the group cancelled the others before it raised
    return reply("taskgroup", work)
