"""A private PostgreSQL cluster for the database lesson, owned by the lab like its server.

The cluster lives in `data/db/pg<major>/` (or `$LAB_DATA_DIR/db/`), listens on 127.0.0.1 and a
free port only (no Unix socket, so it can never meet a system cluster's), asks for a random
password kept in `data/db/password`, and is stopped with its whole process tree on exit, on
exception and when its owner dies. Where the binaries come from, and which user runs them,
is cluster.py's business. `DATABASE_URL` skips all of this and uses an existing server.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from labserver.demo.settings import DB_POOL_DEFAULT
from labserver.harness.processes import procs
from labserver.harness.servers.launcher import LabServer
from labserver.paths import data_dir
from labserver.postgres import cluster
from labserver.postgres.cluster import DB_USER, Account, DatabaseError

__all__ = ["Database", "DatabaseError", "database", "lab_server", "serve"]

MAX_CONNECTIONS = 500  # room for several workers × two pools × db_pool connections
# Bulk loads go fast with wal_level=minimal (a table created in the loading transaction
# writes no WAL); synchronous_commit=off loses at most the last commits in a crash, never
# consistency. fsync stays on: the data is slow to rebuild at the full scale.
SERVER_OPTIONS = {
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",  # TCP only: no socket in /tmp or /var/run/postgresql
    "max_connections": str(MAX_CONNECTIONS),
    "shared_buffers": "256MB",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_wal_size": "4GB",
    "synchronous_commit": "off",
    "logging_collector": "off",
}


def lab_server(
    database_url: str, db_pool: int = DB_POOL_DEFAULT, database: Database | None = None, **settings
) -> LabServer:
    """A LabServer (not yet started) that also serves the database routes against `database_url`.

    `database`, the lab's cluster behind that URL: a server pinned to a core (`cpus`) keeps its
    processes off that core during its runs, as it does Locust (harness/servers/isolate.py).
    """
    server = LabServer(**settings, neighbours=database.pids if database is not None else None)
    server.settings = replace(server.settings, database_url=database_url, db_pool=db_pool)
    server.settings.check()
    return server


def default_root() -> Path:
    return data_dir() / "db"


class Database:
    """A PostgreSQL server for the lesson: the lab's private cluster, or the one DATABASE_URL names.

    Parameters
    ----------
    root : folder of the private cluster (default: data/db, or $LAB_DATA_DIR/db).
    url : an existing server to use instead (default: $DATABASE_URL); nothing is started then.
    port : port to listen on; a free one when None.
    ready_timeout_s : how long to wait for the server to accept connections.
    """

    def __init__(
        self, root: Path | None = None, url: str | None = None, port: int | None = None, ready_timeout_s: float = 60.0
    ):
        self.external_url = url if url is not None else os.environ.get("DATABASE_URL") or None
        self.root = Path(root) if root else default_root()
        self.asked_root = self.root  # start() may move a root run's cluster elsewhere (see _reachable_root)
        self.port = port
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen | None = None
        self.password: str | None = None
        self.init_s: float | None = None  # initdb's time, when this start created the cluster
        self.ready_s: float | None = None

    @property
    def external(self) -> bool:
        return self.external_url is not None

    @property
    def url(self) -> str:
        if self.external_url is not None:
            return self.external_url
        return f"postgresql://{DB_USER}:{self.password}@127.0.0.1:{self.port}/postgres"

    @property
    def alive(self) -> bool:
        if self.external:
            return True
        return self.proc is not None and self.proc.poll() is None

    @property
    def log_path(self) -> Path:
        return self.root / "cluster.log"

    def start(self) -> Database:
        if self.alive and (self.external or self.proc is not None):
            return self
        started = time.perf_counter()
        if not self.external:
            who = cluster.account()
            bin_dir = cluster.reachable_binaries(cluster.binaries(), who)
            self.root = cluster.reachable_root(self.root, who)
            pgdata = self.root / f"pg{cluster.major_version(bin_dir)}"
            self._prepare(bin_dir, who, pgdata)
            self._launch(bin_dir, who, pgdata)
        _running.add(self)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.ready_s = time.perf_counter() - started
        return self

    def _prepare(self, bin_dir: Path, who: Account, pgdata: Path) -> None:
        """Create the cluster on first use; refuse to share one that another process is running."""
        password_file = self.root / "password"
        if (pgdata / "PG_VERSION").exists() and password_file.exists():
            cluster.refuse_if_running(pgdata)
            self.password = password_file.read_text().strip()
            return
        if pgdata.exists():  # a cluster cut off half-way through initdb: start again
            shutil.rmtree(pgdata)
        self.password = secrets.token_urlsafe(24)
        started = time.perf_counter()
        cluster.initdb(bin_dir, who, pgdata, self.password)
        self.init_s = time.perf_counter() - started
        fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.password + "\n")

    def _launch(self, bin_dir: Path, who: Account, pgdata: Path) -> None:
        self.port = self.port or procs.free_port()
        options = {**SERVER_OPTIONS, "port": str(self.port)}
        cmd = [str(bin_dir / "postgres"), "-D", str(pgdata)]
        for key, value in options.items():
            cmd += ["-c", f"{key}={value}"]
        self.proc = cluster.spawn_as(who, cmd, self.log_path)

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + self.ready_timeout_s
        error: Exception | None = None
        while time.monotonic() < deadline:
            if not self.alive:
                code = self.proc.returncode if self.proc is not None else None
                raise DatabaseError(f"PostgreSQL exited during start-up (code {code})\n{self.log_tail()}")
            try:
                with psycopg.connect(self.url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError as e:
                error = e
                if self.external:
                    raise DatabaseError(f"cannot connect to DATABASE_URL's server: {e}") from e
            time.sleep(0.05)
        raise DatabaseError(
            f"PostgreSQL did not accept connections within {self.ready_timeout_s:.0f} s ({error})\n{self.log_tail()}"
        )

    def stop(self) -> None:
        """Fast shutdown (SIGINT: clients are cut off, data is flushed), then the whole tree if anything is left."""
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    self.proc.send_signal(signal.SIGINT)
                    self.proc.wait(timeout=15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            procs.stop_tree(self.proc)
        _running.discard(self)

    def pids(self) -> list[int]:
        """The root of the private cluster's process tree (its backends below it); none for an external server."""
        return [self.proc.pid] if self.proc is not None and self.alive and not self.external else []

    def log_tail(self, lines: int = 30) -> str:
        return f"--- last lines of {self.log_path} ---\n{procs.tail(self.log_path, lines)}"

    def __enter__(self) -> Database:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        if self.external:
            return "Database(DATABASE_URL, external)"
        state = "running" if self.alive else "stopped"
        return f"Database(127.0.0.1:{self.port}, {self.root}, {state})"


_owned = procs.Owned()
_running: set[Database] = _owned.running
_named: dict[str, Database] = _owned.named
_servers: dict[str, LabServer] = {}


def database(name: str = "default", **kw) -> Database:
    """A cluster that lives across notebook cells: re-running the cell keeps the one already running."""
    db = Database(**kw)
    old = _named.get(name)
    if old is not None and old.alive and (old.asked_root, old.external_url) == (db.asked_root, db.external_url):
        return old
    if old is not None:
        old.stop()
    db.start()
    _named[name] = db
    return db


def serve(database_url: str, name: str = "db", **settings) -> LabServer:
    """lab_server(...).start() that lives across notebook cells; re-running stops the one it replaces."""
    old = _servers.pop(name, None)
    if old is not None:
        old.stop()
    server = lab_server(database_url, **settings).start()
    _servers[name] = server
    return server


def stop_all() -> None:
    """Stop every cluster this process started (also run at interpreter exit)."""
    _owned.stop_all()


def main(argv: list[str] | None = None) -> None:
    """`make db`: the lab's PostgreSQL with the shop data, in the foreground until Ctrl-C."""
    import argparse

    from labserver.postgres import data

    parser = argparse.ArgumentParser(prog="python -m labserver.postgres", description=main.__doc__)
    scale_help = "data size; 1 is that of Carlos Pena's k6 load test (default: 0.01)"
    parser.add_argument("--scale", type=float, default=0.01, help=scale_help)
    parser.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    with Database(port=args.port) as db:
        shop = data.ensure(db.url, args.scale)
        print(f"{db} ready in {db.ready_s:.1f} s\n{shop}")
        print(f'connect with:  psql "{shop.conninfo}"\nCtrl-C stops it (the data stays for next time).')
        try:
            while db.alive:
                time.sleep(0.5)
        except KeyboardInterrupt:
            print("stopping PostgreSQL")
        if not db.alive:
            raise SystemExit(f"PostgreSQL stopped on its own\n{db.log_tail()}")
