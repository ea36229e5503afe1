"""Locust's workers joining a master (`python -m labserver worker`) beside two Locust processes forked here."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from labserver.course.bench.measure import IO_MS, quiet
from labserver.harness.load.run import run_plan
from labserver.harness.plans.plan import Run, mirrored
from labserver.paths import ROOT, data_dir

USERS = (20, 50, 100, 200)  # at 100 ms of I/O: 200 to 2,000 req/s
MODES = ("forked", "joined")


def scaleout(duration_s: int, rounds: int = 2) -> dict:
    """Two Locust workers that join a master against two forked here, on one `python -m labserver serve`.

    The same server, the same users, taking turns in mirrored order (forked, joined, joined,
    forked, …) so that the machine's drift falls on both alike; each figure is the mean of its
    rounds. The workers are `python -m labserver worker` processes on this machine, joining over
    127.0.0.1 as a classroom's laptops would over their network, and rejoining for every run.
    """
    from labserver.harness.processes import procs
    from labserver.harness.servers.remote import RemoteServer

    port, master_port = procs.free_port(), procs.free_port()
    master = f"127.0.0.1:{master_port}"
    log = data_dir() / "scaleout-serve.log"  # data/bench/ while the bench runs
    serve = [sys.executable, "-m", "labserver", "serve", "--port", str(port), "--procs", "0"]
    worker = [sys.executable, "-m", "labserver", "worker", "--master", master]
    started: list[subprocess.Popen] = []
    try:
        procs.spawn(serve, log, cwd=ROOT, on_start=started.append)
        for i in range(2):
            procs.spawn(worker, log.with_name(f"scaleout-worker{i}.log"), cwd=ROOT, on_start=started.append)
        server = _attach(RemoteServer, f"http://127.0.0.1:{port}", started[0], log)
        rows = [_turn(server, mode, users, master, duration_s) for _, (mode, users) in mirrored(_turns(), rounds)]
    finally:
        for proc in reversed(started):
            procs.stop_tree(proc, grace_s=3)
    out_rows = _compared(pd.DataFrame(rows))
    return {
        "what": f"/sequential, {IO_MS} ms I/O, users {list(USERS)}, {duration_s} s each, {rounds} rounds",
        "runs": out_rows,
        "largest_shift": max((r["shift"] for r in out_rows), key=abs),
        "valid": all(bool(r["valid"]) for r in rows),
    }


def _turns() -> list[tuple[str, int]]:
    return [(mode, users) for users in USERS for mode in MODES]


def _turn(server, mode: str, users: int, master: str, duration_s: int) -> dict:
    """One run of two Locust processes, forked here or joined as workers; its row with the mode."""
    quiet()
    joined: dict[str, Any] = {"master": master, "join_timeout_s": 60} if mode == "joined" else {}
    run = Run(pattern="sequential", users=users, io_ms=IO_MS)
    (done,) = run_plan(server, [run], duration_s=duration_s, processes=2, lesson="bench", progress=False, **joined)
    print(f"  {mode} {users} users: {done.row['rps']:.0f} req/s, measured/predicted {done.row['ratio']:.3f}")
    return {**done.row, "mode": mode}


def _compared(rows: pd.DataFrame) -> list[dict]:
    """Per number of users, forked beside joined (the mean of their rounds), and joined − forked."""
    frame = rows.groupby(["users", "mode"])[["rps", "ratio", "predicted_rps"]].mean()
    out = []
    for users in USERS:
        f, j = frame.loc[(users, "forked")], frame.loc[(users, "joined")]
        out.append(
            {
                "users": users,
                "predicted_rps": float(j["predicted_rps"]),
                "forked_rps": float(f["rps"]),
                "forked_ratio": float(f["ratio"]),
                "joined_rps": float(j["rps"]),
                "joined_ratio": float(j["ratio"]),
                "shift": float(j["ratio"] - f["ratio"]),
            }
        )
    return out


def _attach(remote, url: str, serve: subprocess.Popen, log: Path, timeout_s: float = 60.0):
    """The server `serve` starts, attached once it answers; RuntimeError with its log if it never does."""
    from labserver.harness.processes import procs
    from labserver.harness.servers.server import ServerError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return remote(url)
        except ServerError:
            if serve.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"`python -m labserver serve` did not answer at {url}:\n{procs.tail(log)}") from None
            time.sleep(0.2)
