"""The query parameters every pattern endpoint shares, and the reply they all give."""

from __future__ import annotations

import os

from fastapi import HTTPException, Query

from labserver.work import CPU_N_MAX, IO_MS_MAX, TASKS_MAX, Work, check_bounds


# async on purpose: FastAPI runs a plain `def` dependency in the thread pool, which would
# take a thread-pool token from every request, async patterns included.
async def work_query(
    tasks: int = Query(1, ge=1, le=TASKS_MAX, description="independent sub-tasks per request"),
    io_ms: int = Query(0, ge=0, le=IO_MS_MAX, description="simulated I/O wait per sub-task, in ms"),
    cpu_n: int = Query(0, ge=0, le=CPU_N_MAX, description="fib(cpu_n) of CPU work per sub-task"),
) -> Work:
    problems = check_bounds(tasks, io_ms, cpu_n)
    if problems:
        detail = [{"loc": ["query", name], "msg": msg, "type": "value_error"} for name, msg in problems]
        raise HTTPException(status_code=422, detail=detail)
    return Work(tasks=tasks, io_ms=io_ms, cpu_n=cpu_n)


def reply(pattern: str, work: Work) -> dict:
    return {"pattern": pattern, "tasks": work.tasks, "io_ms": work.io_ms, "cpu_n": work.cpu_n, "pid": os.getpid()}
