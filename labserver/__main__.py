"""`python -m labserver serve`: the demo server in the foreground, for an instructor who wants it alone.

It listens on 127.0.0.1 (this machine only) unless `--host` names another address, and then
says who may now reach it. A lab on another machine measures it with
`labserver.harness.remote.RemoteServer("http://HOST:PORT")`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path

from labserver.demo.settings import THREADS_DEFAULT, Settings

LOOPBACK = "127.0.0.1"


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)

    settings = Settings(workers=args.workers, threads=args.threads, procs=args.procs, queue_limit=args.queue_limit)
    try:
        settings.check()
    except ValueError as e:
        parser.error(str(e))

    from labserver.harness import launcher, procs  # imported late: `--help` should not pay for them

    try:
        procs.free_port(args.host)  # an address of this machine? (uvicorn's own error would bury it in a traceback)
    except OSError as e:
        parser.error(f"cannot listen on --host {args.host} ({e.strerror or e}): leave it at {LOOPBACK}")
    reach = launcher.exposure(args.host, args.port)
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


if __name__ == "__main__":
    sys.exit(main())
