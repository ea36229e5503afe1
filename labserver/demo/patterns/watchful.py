"""watchful: `sequential`, stopping between sub-tasks once its client has gone.

Teaches: a server does not stop work its client gave up on. An `async def` endpoint runs to
its end after the client's timeout closed the connection, unless it asks: here, after each
sub-task, `await request.is_disconnected()`. A request abandoned at its client's timeout then
costs the sub-tasks begun before it, not all of them.
"""

import asyncio

from fastapi import Depends, HTTPException, Request

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,))  # fib on the loop, between awaits, as sequential's
GONE = 499  # "client closed request", as nginx logs it: no one reads this answer


async def endpoint(request: Request, work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        await asyncio.sleep(work.io_s)
        fib(work.cpu_n)
        if await request.is_disconnected():  # the client has closed its connection: its answer has no reader
            raise HTTPException(status_code=GONE, detail="the client closed its connection")
    return reply("watchful", work)
