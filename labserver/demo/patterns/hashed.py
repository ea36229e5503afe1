"""hashed: a plain `def` endpoint whose CPU work is C code that lets go of the GIL (`hashlib.sha256`).

Teaches: the GIL lets one thread run Python *bytecode* at a time, not one thread compute. A
thread that hashes a buffer (or compresses with zlib, or calls numpy) releases it while the C
code runs, so the thread pool computes on several cores where fib holds one.
"""

import time

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, digest

TRAITS = Traits(computes=Where.RELEASED, waits=(Hold.THREAD,))  # a plain `def`: the whole request in one pool thread


def endpoint(work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # blocks this thread only
        digest(work.cpu_n)  # cpu_n MiB hashed, outside the GIL
    return reply("hashed", work)
