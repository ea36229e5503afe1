"""blocking (anti-pattern): `async def` calling `time.sleep` and CPU work inline.

Teaches: one blocking call in an `async def` stalls every request on that worker; a
worker serves at most one request per tasks × io_ms, however many users wait.
"""

import time

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.LOOP, waits=(Hold.LOOP,))  # time.sleep on the loop: the anti-pattern


async def endpoint(work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # the mistake: blocks the event loop, not just this request
        fib(work.cpu_n)
    return reply("blocking", work)
