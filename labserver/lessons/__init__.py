"""One module per lesson, named by its notebook's slug without the number (`cpu_bound` for 03_cpu_bound).

Each holds what its lesson alone uses: its `plan` (the setup cell's one call, which checks every
parameter before any process starts and sizes the runs to the machine), its parameters for each
run profile and its reference chart (`LESSON`), for the lessons that read their runs in code,
those readings, and the rows of the decision card it shows (card_row.Row; course/card.py orders
them). A bad value is a ValueError that names the parameter, its bounds and the value given
(labserver/checks.py); a lone number where a list goes is a list of one, and a list passed as text
(papermill's `-p`) is an error that says how to pass it. Sizes that follow the machine take its
cores as an argument, so that a test can ask for any count. What two lessons share lives in
theory/, charts/ or harness/, or, for the card's rows, card_row: no lesson's module imports another's.

`LESSONS` is the registry, by slug, in the order of the notebooks' names.
"""

from __future__ import annotations

from labserver.lessons import (
    app_threads,
    async_vs_sync,
    blocking,
    calling_services,
    client_side,
    clients_that_leave,
    cpu_bound,
    database,
    one_slow_route,
    overload,
    sequential_vs_gather,
    stalls_and_shedding,
    summary,
    the_instrument,
    without_the_gil,
    workers,
    your_own_app,
)
from labserver.lessons.lesson import Lesson

_MODULES = (
    async_vs_sync,
    sequential_vs_gather,
    cpu_bound,
    workers,
    blocking,
    client_side,
    database,
    overload,
    stalls_and_shedding,
    without_the_gil,
    app_threads,
    calling_services,
    clients_that_leave,
    one_slow_route,
    your_own_app,
    the_instrument,
    summary,
)
LESSONS: dict[str, Lesson] = {m.LESSON.slug: m.LESSON for m in sorted(_MODULES, key=lambda m: m.LESSON.slug)}
