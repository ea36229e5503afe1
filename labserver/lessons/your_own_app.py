"""Lesson 15, your own app: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import ModuleType

from labserver import checks, protocol
from labserver.demo.settings import THREADS_DEFAULT, Settings
from labserver.lessons.lesson import Lesson
from labserver.paths import ROOT
from labserver.theory.workload import USERS_MAX
from labserver.yourapp import routes as your_routes
from labserver.yourapp import wrap

LESSON = Lesson(
    "15_your_own_app",
    profiles={
        "quick": {},
        "live": {"users": [8, 64], "duration_s": 2},
        "full": {"users": [1, 256], "duration_s": 10},
        "smoke": {"routes": ["GET /report"], "users": [2, 4], "duration_s": 2},
    },
)


@dataclass(frozen=True)
class YourOwnApp:
    """Lesson 15's checked parameters: the routes as the lab sends them, and the sweep's users."""

    sent: list[protocol.Route]  # the routes, as the lab sends them
    least: int  # the sweep's first users
    most: int  # ... and its last
    source: ModuleType  # the app's module, imported as uvicorn will import it: one that does not import stops here


def plan(*, app: str, routes: list[str], users: list[int], duration_s: int, workers: int, threads: int) -> YourOwnApp:
    """Lesson 15: `app` (module:attribute, from the lab's folder) on `workers` workers of `threads` threads (0: the
    app's own limit), each of `routes` priced, then swept from users[0] up to users[1] users, `duration_s` s a
    run."""
    if not isinstance(app, str) or ":" not in app:
        raise ValueError(f"app is module:attribute, as uvicorn takes it (main:app), got {app!r}")
    routes = checks.parameter("routes", routes, list[str])
    if not routes:
        raise ValueError("routes must name at least one route, such as 'GET /items'")
    users = checks.parameter("users", users, list[int])
    if len(users) != 2 or not 1 <= users[0] <= users[1]:
        raise ValueError(f"users is [least, most], the sweep's first and last users, least ≤ most, got {users!r}")
    checks.whole("users", users[1], 1, USERS_MAX)
    checks.whole("duration_s", duration_s, 1, 60)
    checks.whole("threads", threads, 0, 10_000)  # 0: the app's own limit
    Settings(workers=workers, threads=threads or THREADS_DEFAULT, procs=0).check()
    sent = [your_routes.parse(r, folder=ROOT) for r in routes]
    wrap.load(app, str(ROOT))
    return YourOwnApp(sent, users[0], users[1], sys.modules[app.partition(":")[0]])
