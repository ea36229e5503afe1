"""`python -m labserver serve`: the demo server in the foreground, for an instructor who wants it alone."""

from __future__ import annotations

import argparse
import os
import sys

from labserver.demo.settings import THREADS_DEFAULT, Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labserver", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the demo server in the foreground (Ctrl-C stops it)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default: 8000)")
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default: 1)")
    serve.add_argument("--threads", type=int, default=THREADS_DEFAULT, help="thread-pool size per worker (default: 40)")
    serve.add_argument(
        "--procs", type=int, default=Settings().procs, help="process-pool size per worker (default: cores)"
    )
    args = parser.parse_args(argv)

    settings = Settings(workers=args.workers, threads=args.threads, procs=args.procs)
    try:
        settings.check()
    except ValueError as e:
        parser.error(str(e))
    if args.host != "127.0.0.1":
        print(f"warning: binding {args.host}: other machines may reach this server", file=sys.stderr)
    os.environ.update(settings.to_env())

    import uvicorn  # imported late: `--help` should not pay for it

    uvicorn.run(
        "labserver.demo.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level="info",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
