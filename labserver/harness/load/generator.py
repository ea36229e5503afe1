"""The load generator's process: Locust's command line, its master and workers, and the watch over it as it runs.

Locust is never imported here (it monkey-patches the process with gevent): it runs as
`python -m locust`, started by load.py under the supervisor (supervise.py). Its forked processes
listen on this machine only; workers on other machines join a master at an address of this one.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from labserver import protocol
from labserver.harness.plans import feed
from labserver.harness.plans.plan import Meters, Options, Stage, UserClass, most_users, stage_at
from labserver.harness.processes import procs
from labserver.harness.processes.supervise import Status, Watched, until_exit
from labserver.harness.servers import addresses
from labserver.harness.servers.isolate import Isolation
from labserver.harness.servers.server import Server
from labserver.paths import LOCUSTFILES

if TYPE_CHECKING:
    from tqdm.std import tqdm

USER_CLASSES: dict[UserClass, str] = {"fast": "PatternUser", "requests": "PatternHttpUser", "arrivals": "ArrivalUser"}
RUN_TIME_SLACK_S = 5
# Locust workers that join a master from other machines (`python -m labserver worker`): one
# process each, so a class's laptops can send far more than this machine's cores could.
WORKERS_MAX = 64
MASTER_PORT = 5557  # Locust's own default: what a worker dials when told only the master's host


def master_address(master: str) -> tuple[str, int]:
    """(host, port) where Locust's master waits for workers, from "HOST" or "HOST:PORT"; ValueError otherwise.

    HOST must be an address of this machine (the master listens there): 127.0.0.1 for workers
    on this machine only, this machine's address on the classroom's network for others.
    """
    example = "'192.168.1.20:5557'"
    if not isinstance(master, str) or not master.strip():
        raise ValueError(f"master must be the address Locust's master listens on, such as {example}, got {master!r}")
    host, _, port_text = master.strip().rpartition(":") if ":" in master else (master.strip(), "", "")
    try:
        port = int(port_text) if port_text else MASTER_PORT
    except ValueError:
        raise ValueError(f"master's port must be a number, such as {example}, got {master!r}") from None
    if not 0 < port < 65536:
        raise ValueError(f"master's port must be from 1 to 65535, got {port}")
    try:
        procs.free_port(host)
    except OSError as e:
        raise ValueError(
            f"master {host!r} is not an address of this machine ({e.strerror or e}): Locust's master listens there"
        ) from None
    if procs.port_in_use(port, host):
        raise ValueError(f"port {port} on {host} is taken: give the master another, such as {host}:{port + 1}")
    return host, port


def worker_command(master: str) -> str:
    """What to run on each worker machine to join the master at `master` (master_address's form)."""
    host, port = master_address(master)
    return f"python -m labserver worker --master {host}:{port}"


def say_join(master: str, processes: int, join_timeout_s: float) -> None:
    """Tell the user what to run on each worker machine, and who may reach the master meanwhile."""
    host, port = master_address(master)
    reach = addresses.exposure(host, port)
    lines = [f"Locust's master waits up to {join_timeout_s:g} s for {processes} worker(s) at {host}:{port}."]
    lines.append(f"On each worker machine, with the lab installed, run:\n    {worker_command(master)}")
    if reach:
        lines.append(
            f"The master is {reach.split(':')[0]}: any machine that can reach it may join as a worker and learn"
            " which server this plan loads (Locust's messages are not authenticated)."
        )
    print("\n".join(lines), file=sys.stderr, flush=True)


def command(server: Server, tmp: Path, stages: list[Stage], options: Options, live: bool = False) -> list[str]:
    """Locust's command line for the plan of `stages` (its default host: `server`'s)."""
    users = most_users(stages)
    spawn_rate = options.spawn_rate_for(stages)
    total_s = sum(s.duration_s for s in stages)
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / "pattern.py"), USER_CLASSES[options.user_class]]
    cmd += ["--headless", "--only-summary", "--host", server.url, "-u", str(users), "-r", str(spawn_rate)]
    # The locustfile ends the test when its plan is over; --run-time, a little later, is a safety net.
    cmd += ["-t", f"{math.ceil(total_s) + RUN_TIME_SLACK_S}s", "--stop-timeout", "0"]
    cmd += ["--json-file", str(tmp / "locust"), "--csv", str(tmp / "locust"), "--csv-full-history"]
    cmd += ["--html", str(tmp / "report.html"), "--records-file", str(tmp / protocol.RECORDS)]
    cmd += ["--plan-file", str(tmp / protocol.PLAN_FILE), "--timeout-s", str(options.timeout_s)]
    cmd += ["--events-file", str(tmp / protocol.EVENTS_FILE)]
    if live:
        cmd += ["--live-file", str(tmp / protocol.LIVE)]
    if options.master is not None:
        host, port = master_address(options.master)
        cmd += ["--master", "--master-bind-host", host, "--master-bind-port", str(port)]
        cmd += ["--expect-workers", str(options.processes), "--expect-workers-max-wait", f"{options.join_timeout_s:g}"]
    elif options.processes > 1:
        # Locust's master would listen on every interface, on a fixed port (two plans at once would
        # collide): here it listens on this machine only, on a free port its forks are told.
        free = str(procs.free_port())
        cmd += ["--processes", str(options.processes), "--master-bind-host", "127.0.0.1"]
        cmd += ["--master-bind-port", free, "--master-port", free]
    return cmd


def watch(
    run: Watched,
    servers: list[Server],
    stages: list[Stage],
    meters: Meters,
    *,
    text: bool = False,
    live: feed.Live | None = None,
    clock: Callable[[], float] = time.monotonic,
    wait_s: float = 0.0,
    events: protocol.Events | None = None,
    processes: int = 1,
    isolation: Isolation | None = None,
) -> None:
    """Wait for Locust to finish, sampling CPU and checking the servers; `run` says how it ended.

    Meanwhile `text` shows a text bar (a terminal; tqdm's notebook bar needs ipywidgets, and a
    notebook has the live chart instead), and `live` feeds its watcher about once a second.
    `wait_s` is how long a master may wait for its `processes` workers first; its `events` say how many came.
    `isolation` places the other processes for each stage as Locust begins it (a pinned server's core is its own).
    """
    every = meters.every()
    total_s = sum(s.duration_s for s in stages)
    started = clock()
    with text_bar(total_s, text) as bar:

        def tick() -> None:
            nonlocal started, wait_s
            for meter in every:
                meter.sample()
            locust = events.state() if events is not None else None
            if wait_s and locust is not None:
                waiting = feed.waiting(locust, processes)
                if waiting is None:  # every worker came: the plan's seconds count from here
                    started, wait_s = clock(), 0.0
                elif bar is not None:
                    bar.set_description_str(f"waiting for Locust workers: {waiting}", refresh=False)
                    bar.refresh()
            if isolation is not None and locust is not None:
                isolation.tick(locust)
            if bar is not None and not wait_s:
                _show(bar, stages, clock() - started, total_s)
            if live is not None:
                live.tick()

        # start-up and shutdown with room to spare
        until_exit(run, servers, deadline_s=wait_s + total_s + 30, tick=tick, clock=clock)
    if run.status is Status.OK:
        for meter in every:
            meter.sample()
        if not all(s.alive for s in servers):
            run.stop(Status.SERVER_DIED)


def _show(bar: tqdm, stages: list[Stage], elapsed_s: float, total_s: float) -> None:
    """The text bar at `elapsed_s` into the plan: its run, and its seconds."""
    i = stage_at(stages, elapsed_s)
    s = stages[i]
    run = f"run {i + 1}/{len(stages)}: " if len(stages) > 1 else ""
    bar.set_description_str(f"{run}{s.pattern} · {s.users} users", refresh=False)
    bar.n = min(total_s, round(elapsed_s))
    bar.refresh()


@contextlib.contextmanager
def text_bar(total_s: float, show: bool) -> Iterator[tqdm | None]:
    """tqdm's plain text bar (never its notebook widget), or None when none is shown."""
    if not show:
        yield None
        return
    from tqdm.std import tqdm  # the terminal's bar; imported only when one is shown

    with tqdm(total=total_s, leave=False, bar_format="{desc}: {bar} {n:.0f}/{total} s") as bar:
        yield bar
