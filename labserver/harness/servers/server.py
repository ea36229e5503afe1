"""What the harness measures, wherever it runs: `Server`, with its `url`, its `settings`, whether it is `alive` and
a meter of its CPU; LabServer (launcher.py) for one the lab starts here, RemoteServer (remote.py) for one it did not
start. `ServerError` says a server did not come up, or died.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from labserver.demo import cpus
from labserver.demo.settings import Settings
from labserver.harness.processes.meters import ServerMeter


class ServerError(RuntimeError):
    """The server did not come up, or died; the message carries the tail of its log."""


class Server:
    """A lab server the harness can measure (run_plan, sweep): its `url`, its `settings`, whether it is `alive`.

    Subclasses say how it came to run and how its CPU is measured (`meter`). The telemetry of its
    workers is read from `telemetry_dir` when the lab can reach it (None: not saved).
    """

    settings: Settings
    telemetry_dir: Path | None = None
    same_machine = True  # runs on this machine's kernel: its CPU is inside this machine's
    info_path = "/info"  # its settings and gauges (demo/app.py's /info)

    def cores(self) -> float:
        """The CPUs its workers may use: the lab's own, for a server on this machine."""
        return cpus.cores()

    def neighbours(self) -> list[int]:
        """Processes on this machine that serve it (a database): kept off its cores when it is pinned (isolate.py)."""
        return []

    @property
    def url(self) -> str:
        raise NotImplementedError

    @property
    def alive(self) -> bool:
        raise NotImplementedError

    def check_ready(self) -> None:
        """Raise ServerError, before any load, unless this server can be measured now."""
        if not self.alive:
            raise ServerError(f"the server is not running; start it first\n{self.log_tail()}")

    def meter(self) -> ServerMeter:
        """A CPU meter of this server's processes (sample, usage, per_process): a RemoteCpuMeter for a RemoteServer."""
        raise NotImplementedError

    def get(self, path: str, timeout: float = 5.0) -> dict:
        """GET `path` from the server and decode its JSON."""
        with urllib.request.urlopen(self.url + path, timeout=timeout) as response:
            return json.loads(response.read())

    def info(self) -> dict:
        return self.get(self.info_path)

    def log_tail(self, lines: int = 30) -> str:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError
