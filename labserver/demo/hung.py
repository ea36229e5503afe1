"""Lesson 13's call that never answers, given up on with `asyncio.timeout`, beside sub-tasks that go on.

A request runs its `tasks` sub-tasks at once: one is a call to a service that does not answer,
which `asyncio.timeout` gives up on halfway through io_ms (TimeoutError); each of the others waits
io_ms, then computes fib(cpu_n). The endpoint answers 504 once the call has timed out. What
happens to the others then is the lesson: `gather` leaves them running, a TaskGroup cancels them.
"""

from __future__ import annotations

import asyncio

from fastapi import HTTPException

from labserver.demo.work import Work, fib

GIVE_UP_AFTER = 0.5  # of io_ms: the hung call is given up on before the other sub-tasks end
GAVE_UP = 504  # Gateway Timeout: a service behind this one did not answer in time
_WHY = "a call to another service timed out"
# answered to every request: one of its calls always hangs
RESPONSES = {GAVE_UP: {"description": _WHY}}


async def hung_call(work: Work) -> None:
    """A call that never answers, given up on after GIVE_UP_AFTER × io_ms: raises TimeoutError."""
    async with asyncio.timeout(work.io_s * GIVE_UP_AFTER):
        await asyncio.Event().wait()  # nothing ever sets it: the other service never answers


async def sub_task(work: Work) -> int:
    """One of the other sub-tasks: wait io_ms, then compute on the loop."""
    await asyncio.sleep(work.io_s)
    return fib(work.cpu_n)


def gave_up() -> HTTPException:
    """The answer once a call has timed out."""
    return HTTPException(status_code=GAVE_UP, detail=_WHY)
