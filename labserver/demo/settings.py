"""Server settings, passed from `LabServer` to each uvicorn worker through the environment.

uvicorn's `--workers` starts fresh processes that import the app by name, so the
environment is the one channel that reaches all of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from labserver.checks import whole
from labserver.demo.cpus import check_cpus, whole_cores

THREADS_DEFAULT = 40  # AnyIO's own default thread-pool size
WORKERS_MAX = 64  # uvicorn workers of one server: one past the cores of a 63-core machine
THREADS_MAX = 1000
PROCS_MAX = 32
DB_POOL_DEFAULT = 20  # connections in each of the database lesson's two pools (per worker)
DB_POOL_MAX = 200
QUEUE_LIMIT_MAX = 100_000


@dataclass(frozen=True)
class Settings:
    workers: int = 1
    threads: int = THREADS_DEFAULT
    procs: int = field(default_factory=whole_cores)  # one pool process per core this process may use
    database_url: str = ""  # libpq connection string; when set, the app serves the database lesson's routes
    db_pool: int = DB_POOL_DEFAULT
    # The CPUs the server's processes may run on (empty: wherever the OS puts them). Lesson 07 pins
    # a server to one core to show what a thread pool's GIL hand-offs between cores cost.
    cpus: tuple[int, ...] = ()
    # Where each worker appends its telemetry (demo/telemetry.py), one file per pid; empty: none is
    # sampled. The launcher gives every start a folder of its own.
    telemetry_dir: str = ""
    # Load shedding (lesson 08, demo/shed.py): a request that would wait behind this many others for
    # a thread gets 503 + Retry-After at once. None: every request waits its turn.
    queue_limit: int | None = None

    def to_env(self) -> dict[str, str]:
        return {
            "LAB_WORKERS": str(self.workers),
            "LAB_THREADS": str(self.threads),
            "LAB_PROCS": str(self.procs),
            "LAB_DATABASE_URL": self.database_url,
            "LAB_DB_POOL": str(self.db_pool),
            "LAB_CPUS": ",".join(map(str, self.cpus)),
            "LAB_TELEMETRY_DIR": self.telemetry_dir,
            "LAB_QUEUE_LIMIT": "" if self.queue_limit is None else str(self.queue_limit),
        }

    @classmethod
    def from_env(cls) -> Settings:
        default = cls()
        return cls(
            workers=int(os.environ.get("LAB_WORKERS", default.workers)),
            threads=int(os.environ.get("LAB_THREADS", default.threads)),
            procs=int(os.environ.get("LAB_PROCS", default.procs)),
            database_url=os.environ.get("LAB_DATABASE_URL", default.database_url),
            db_pool=int(os.environ.get("LAB_DB_POOL", default.db_pool)),
            cpus=tuple(int(c) for c in os.environ.get("LAB_CPUS", "").split(",") if c.strip()),
            telemetry_dir=os.environ.get("LAB_TELEMETRY_DIR", default.telemetry_dir),
            queue_limit=int(os.environ["LAB_QUEUE_LIMIT"]) if os.environ.get("LAB_QUEUE_LIMIT") else None,
        )

    def check(self) -> None:
        """Raise ValueError naming the setting that is out of range."""
        whole("workers", self.workers, 1, WORKERS_MAX)
        whole("threads", self.threads, 1, THREADS_MAX)
        whole("procs", self.procs, 0, PROCS_MAX)
        whole("db_pool", self.db_pool, 1, DB_POOL_MAX)
        if self.queue_limit is not None:
            whole("queue_limit", self.queue_limit, 0, QUEUE_LIMIT_MAX)
        if self.cpus:
            check_cpus(self.cpus)
