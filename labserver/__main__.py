"""`python -m labserver serve`: the demo server in the foreground, for an instructor who wants it alone.
`python -m labserver worker --master HOST:PORT`: this machine joins a lab's runs as a Locust worker.

`serve` listens on 127.0.0.1 (this machine only) unless `--host` names another address, and then
says who may now reach it. A lab on another machine measures it with
`labserver.harness.servers.remote.RemoteServer("http://HOST:PORT")`.

`measure APP ROUTE...` points the lab at an app of one's own (labserver/yourapp/command.py).

`worker` is a student's one command in classroom mode: it joins the run a lab's master plans
(run_plan's `master`), sends the load it is given, reports its records and CPU back, and waits
for the next run, until Ctrl-C (or `--runs`). It sends load only to the master's own host,
unless `--allow-target` names another: a master cannot point it anywhere else.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path

from labserver import config
from labserver.demo.settings import THREADS_DEFAULT, Settings

LOOPBACK = "127.0.0.1"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m labserver", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the demo server in the foreground (Ctrl-C stops it)")
    serve.add_argument(
        "--host",
        default=LOOPBACK,
        help="address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0: every interface)",
    )
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default: 8000)")
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default: 1)")
    serve.add_argument("--threads", type=int, default=THREADS_DEFAULT, help="thread-pool size per worker (default: 40)")
    serve.add_argument(
        "--procs", type=int, default=Settings().procs, help="process-pool size per worker (default: cores)"
    )
    serve.add_argument(
        "--queue-limit",
        type=int,
        default=None,
        help="shed a request that would wait behind this many others for a thread (503); default: none is shed",
    )
    from labserver.yourapp import command as measure  # its parser only: the rest is imported when it runs

    measure.add_parser(sub)
    worker = sub.add_parser("worker", help="join a lab's runs as a Locust worker (Ctrl-C stops)")
    worker.add_argument("--master", required=True, help="HOST:PORT of the lab's Locust master, as the lab printed it")
    worker.add_argument(
        "--allow-target",
        action="append",
        default=[],
        metavar="HOST",
        help="a host besides the master's that this worker may send load to (the server's, if it runs elsewhere)",
    )
    worker.add_argument("--runs", type=int, default=0, help="stop after this many runs (default: 0, until Ctrl-C)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "worker":
        return join(parser, args.master, args.allow_target, args.runs)
    if args.command == "measure":
        from labserver.yourapp import command

        return command.run(parser, args)
    return serve(parser, args)


def serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The demo server in the foreground, with the settings checked before uvicorn starts."""
    settings = Settings(workers=args.workers, threads=args.threads, procs=args.procs, queue_limit=args.queue_limit)
    try:
        settings.check()
    except ValueError as e:
        parser.error(str(e))

    from labserver.harness.processes import procs
    from labserver.harness.servers import addresses  # imported late: `--help` should not pay for them

    try:
        procs.free_port(args.host)  # an address of this machine? (uvicorn's own error would bury it in a traceback)
    except OSError as e:
        parser.error(f"cannot listen on --host {args.host} ({e.strerror or e}): leave it at {LOOPBACK}")
    reach = addresses.exposure(args.host, args.port)
    if reach:
        print(f"labserver: {reach}", file=sys.stderr)
    # Each worker samples itself into a folder of this run's (removed at exit): with --workers N,
    # that is how the worker answering /info reports the others' CPU to a lab on another machine.
    folder = Path(tempfile.mkdtemp(prefix="labserver-serve-"))
    os.environ.update(dataclasses.replace(settings, telemetry_dir=str(folder / "telemetry")).to_env())

    import uvicorn

    try:
        uvicorn.run(
            "labserver.demo.app:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level="info",
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def join(parser: argparse.ArgumentParser, master: str, allowed: list[str], runs: int) -> int:
    """Run Locust workers for the master at `master`, one run after another; the exit code of the last."""
    host, _, port = master.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        parser.error(f"--master must be HOST:PORT, such as 192.168.1.20:5557, got {master!r}")
    if runs < 0:
        parser.error(f"--runs must be 0 (until Ctrl-C) or more, got {runs}")
    import subprocess

    from labserver.paths import LOCUSTFILES

    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / "pattern.py"), "--worker", "--loglevel", "WARNING"]
    cmd += ["--master-host", host, "--master-port", port]
    env = {**os.environ, config.WORKER_TARGETS.name: config.WORKER_TARGETS.text((host, *allowed))}
    targets = ", ".join([host, *allowed])
    done = 0
    while not runs or done < runs:
        print(
            f"labserver worker: waiting for a run from the master at {master}"
            f" (sends load to {targets} only; Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
        proc = subprocess.Popen(cmd, env=env)
        try:
            code = proc.wait()
        except KeyboardInterrupt:
            code = 130
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
        if code:
            # Locust gives up after 5 minutes without a master, or exits as told; either ends the session.
            why = "stopped" if code == 130 else f"Locust's worker exited with code {code} (no master reached?)"
            print(f"labserver worker: {why} after {done} run(s)", file=sys.stderr, flush=True)
            return code
        done += 1
        print(f"labserver worker: run {done} done", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
