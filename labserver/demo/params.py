"""The query parameters every pattern endpoint shares, and the reply they all give."""

from __future__ import annotations

import os
import re
from typing import Annotated

from fastapi import HTTPException, Query
from pydantic import BeforeValidator

from labserver.demo.work import CPU_N_MAX, IO_MS_MAX, TASKS_MAX, Work, check_bounds


def _digits(value: object) -> object:
    """A query value written as a whole number: pydantic alone reads "5\v" or " 5" as 5."""
    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]+", value):
        raise ValueError("must be a whole number, written with digits only")
    return value


Digits = BeforeValidator(_digits)


# async on purpose: FastAPI runs a plain `def` dependency in the thread pool, which would
# take a thread-pool token from every request, async patterns included.
async def work_query(
    tasks: Annotated[int, Query(ge=1, le=TASKS_MAX, description="independent sub-tasks per request"), Digits] = 1,
    io_ms: Annotated[int, Query(ge=0, le=IO_MS_MAX, description="simulated I/O wait per sub-task, in ms"), Digits] = 0,
    cpu_n: Annotated[
        int,
        Query(ge=0, le=CPU_N_MAX, description="fib(cpu_n) of CPU work per sub-task (/hashed: MiB hashed)"),
        Digits,
    ] = 0,
) -> Work:
    problems = check_bounds(tasks, io_ms, cpu_n)
    if problems:
        detail = [{"loc": ["query", name], "msg": msg, "type": "value_error"} for name, msg in problems]
        raise HTTPException(status_code=422, detail=detail)
    return Work(tasks=tasks, io_ms=io_ms, cpu_n=cpu_n)


def reply(pattern: str, work: Work) -> dict:
    return {"pattern": pattern, "tasks": work.tasks, "io_ms": work.io_ms, "cpu_n": work.cpu_n, "pid": os.getpid()}
