"""Server settings, passed from `LabServer` to each uvicorn worker through the environment.

uvicorn's `--workers` starts fresh processes that import the app by name, so the
environment is the one channel that reaches all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labserver import config
from labserver.checks import whole
from labserver.demo.cpus import check_cpus, whole_cores

THREADS_DEFAULT = config.THREADS.default
WORKERS_MAX = 64  # uvicorn workers of one server: one past the cores of a 63-core machine
THREADS_MAX = 1000
PROCS_MAX = 64  # process-pool size per worker: one per core of a 64-core machine
DB_POOL_DEFAULT = config.DB_POOL.default
DB_POOL_MAX = 200
QUEUE_LIMIT_MAX = 100_000

# Each field's variable, which labserver/config.py names and describes.
ENV: dict[str, config.Setting] = {
    "workers": config.WORKERS,
    "threads": config.THREADS,
    "procs": config.PROCS,
    "database_url": config.DATABASE_URL,
    "db_pool": config.DB_POOL,
    "cpus": config.CPUS,
    "telemetry_dir": config.TELEMETRY_DIR,
    "queue_limit": config.QUEUE_LIMIT,
    "gil": config.GIL,
    "upstream": config.UPSTREAM,
}


@dataclass(frozen=True)
class Settings:
    workers: int = config.WORKERS.default
    threads: int = THREADS_DEFAULT
    procs: int = field(default_factory=lambda: min(whole_cores(), PROCS_MAX))  # a pool process per usable core
    database_url: str = config.DATABASE_URL.default  # when set, the app serves the database lesson's routes
    db_pool: int = DB_POOL_DEFAULT
    # The CPUs the server's processes may run on (empty: wherever the OS puts them). Lesson 07 pins
    # a server to one core to show what a thread pool's GIL hand-offs between cores cost.
    cpus: tuple[int, ...] = config.CPUS.default
    # Where each worker appends its telemetry (demo/telemetry.py), one file per pid; empty: none is
    # sampled. The launcher gives every start a folder of its own.
    telemetry_dir: str = config.TELEMETRY_DIR.default
    # Load shedding (lesson 08, demo/shed.py): a request that would wait behind this many others for
    # a thread gets 503 + Retry-After at once. None: every request waits its turn.
    queue_limit: int | None = config.QUEUE_LIMIT.default
    # Whether the server's threads share one GIL: False only on a free-threaded Python that runs
    # without it (lesson 10), where a thread pool computes on several cores at once.
    gil: bool = config.GIL.default
    # The other service lesson 12's endpoints call (http://host:port); empty: they answer 503.
    upstream: str = config.UPSTREAM.default

    def to_env(self) -> dict[str, str]:
        """What `from_env` reads back in each worker: one LAB_* variable per field."""
        return {setting.name: setting.text(getattr(self, field)) for field, setting in ENV.items()}

    @classmethod
    def from_env(cls) -> Settings:
        """The settings `to_env` handed this worker; a variable left unset keeps its field's default."""
        given = {field: setting.read() for field, setting in ENV.items()}
        if given["procs"] is None:  # unset: one per core, which only this process can count
            del given["procs"]
        return cls(**given)

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
