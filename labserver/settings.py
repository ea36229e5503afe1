"""Server settings, passed from `LabServer` to each uvicorn worker through the environment.

uvicorn's `--workers` starts fresh processes that import the app by name, so the
environment is the one channel that reaches all of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

THREADS_DEFAULT = 40  # AnyIO's own default thread-pool size
WORKERS_MAX = 16
THREADS_MAX = 1000
PROCS_MAX = 32
DB_POOL_DEFAULT = 20  # connections in each of the database lesson's two pools (per worker)
DB_POOL_MAX = 200


@dataclass(frozen=True)
class Settings:
    workers: int = 1
    threads: int = THREADS_DEFAULT
    procs: int = os.cpu_count() or 1
    database_url: str = ""  # libpq connection string; when set, the app serves the database lesson's routes
    db_pool: int = DB_POOL_DEFAULT

    def to_env(self) -> dict[str, str]:
        return {
            "LAB_WORKERS": str(self.workers),
            "LAB_THREADS": str(self.threads),
            "LAB_PROCS": str(self.procs),
            "LAB_DATABASE_URL": self.database_url,
            "LAB_DB_POOL": str(self.db_pool),
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
        )

    def check(self) -> None:
        """Raise ValueError naming the setting that is out of range."""
        for name, value, low, high in (
            ("workers", self.workers, 1, WORKERS_MAX),
            ("threads", self.threads, 1, THREADS_MAX),
            ("procs", self.procs, 0, PROCS_MAX),
            ("db_pool", self.db_pool, 1, DB_POOL_MAX),
        ):
            if not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
