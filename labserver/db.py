"""A private PostgreSQL cluster for the database lesson, owned by the lab like its server.

The binaries come from the pgserver wheel (PostgreSQL 16, installed with the lab's other
dependencies), used directly: its Python API, run as root, would add a system user and widen
the permissions of every parent folder without asking. The cluster lives in
`data/db/pg<major>/`, listens on 127.0.0.1 and a free port only (no Unix socket, so it can
never meet a system cluster's), asks for a random password kept in `data/db/password`, and
is stopped with its whole process tree on exit, on exception and when its owner dies.

PostgreSQL refuses to run as root. Run as root (as CI does), the lab creates one system user
for it, `concurrency-lab-pg` (no login, no home), says so, and runs `initdb` and `postgres`
as that user; nothing else on the machine changes. `DATABASE_URL` skips all of this and
uses an existing server instead.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from labserver import procs
from labserver.paths import data_dir
from labserver.server import LabServer
from labserver.settings import DB_POOL_DEFAULT

RUN_AS = "concurrency-lab-pg"  # the system user that runs PostgreSQL when the lab runs as root
DB_USER = "lab"  # the cluster's superuser
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


class DatabaseError(RuntimeError):
    """The cluster could not be prepared or did not come up; the message says why and what to do."""


def binaries() -> Path:
    """The folder holding `initdb` and `postgres`: $LAB_PG_BIN, else pgserver's wheel, else the OS's packages."""
    if os.environ.get("LAB_PG_BIN"):
        return _checked_bin(Path(os.environ["LAB_PG_BIN"]))
    # find_spec locates the package without importing it (its import has side effects we avoid)
    spec = importlib.util.find_spec("pgserver")
    if spec and spec.submodule_search_locations:
        wheel = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        if (wheel / "postgres").exists():
            return wheel
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    if debian:
        return debian[-1].parent
    raise DatabaseError(
        "no PostgreSQL binaries found: run `make setup` (it installs the pgserver wheel), set LAB_PG_BIN to a "
        "folder holding initdb and postgres, or set DATABASE_URL to use an existing server"
    )


def _checked_bin(folder: Path) -> Path:
    missing = [name for name in ("initdb", "postgres") if not (folder / name).exists()]
    if missing:
        raise DatabaseError(f"{folder} has no {', '.join(missing)}: point LAB_PG_BIN at PostgreSQL's bin folder")
    return folder


def major_version(bin_dir: Path) -> int:
    out = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1].split(".")[0])  # "postgres (PostgreSQL) 16.2"


@dataclass(frozen=True)
class Account:
    """Who runs the server processes: this process's own user, or the lab's system user when root."""

    name: str
    uid: int
    gid: int

    @property
    def is_self(self) -> bool:
        return self.uid == os.geteuid()

    def popen_kw(self) -> dict:
        """subprocess arguments that run a child as this account (nothing when it is us)."""
        return {} if self.is_self else {"user": self.uid, "group": self.gid, "extra_groups": []}


def account() -> Account:
    """The account to run PostgreSQL as, creating the lab's system user if we are root and it is missing."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid())
        return Account(me.pw_name, me.pw_uid, me.pw_gid)
    try:
        entry = pwd.getpwnam(RUN_AS)
    except KeyError:
        entry = _create_system_user()
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid)


def _create_system_user() -> pwd.struct_passwd:
    useradd = shutil.which("useradd")
    if useradd is None:
        raise DatabaseError(
            f"running as root, PostgreSQL needs an unprivileged user and there is no useradd here: create a "
            f"system user named {RUN_AS}, run the lab as a normal user, or set DATABASE_URL"
        )
    subprocess.run(
        [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
         "--shell", "/usr/sbin/nologin", "--comment", "Concurrency Lab's private PostgreSQL", RUN_AS],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    print(
        f"Running as root: PostgreSQL refuses to run as root, so the lab created the system user {RUN_AS!r} "
        f"(no login, no home) to run its private cluster. Remove it later with: userdel {RUN_AS}"
    )
    return pwd.getpwnam(RUN_AS)


def reachable(path: Path, who: Account) -> bool:
    """Whether `who` can reach `path` (execute it, or enter it if a folder): every parent must let it through."""
    if who.is_self:
        return os.access(path, os.X_OK)
    return subprocess.run(["test", "-x", str(path)], **who.popen_kw(), capture_output=True).returncode == 0


def lab_server(database_url: str, db_pool: int = DB_POOL_DEFAULT, **settings) -> LabServer:
    """A LabServer (not yet started) that also serves the database routes against `database_url`."""
    server = LabServer(**settings)
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

    def __init__(self, root: Path | None = None, url: str | None = None, port: int | None = None,
                 ready_timeout_s: float = 60.0):  # fmt: skip
        self.external_url = url if url is not None else os.environ.get("DATABASE_URL") or None
        self.root = Path(root) if root else default_root()
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
        if self.external:
            return self.external_url
        return f"postgresql://{DB_USER}:{self.password}@127.0.0.1:{self.port}/postgres"

    @property
    def alive(self) -> bool:
        if self.external:
            return True
        return self.proc is not None and self.proc.poll() is None

    @property
    def log_path(self) -> Path:
        return self.root / "postgres.log"

    def start(self) -> Database:
        if self.alive and (self.external or self.proc is not None):
            return self
        started = time.perf_counter()
        if not self.external:
            bin_dir = binaries()
            who = account()
            pgdata = self.root / f"pg{major_version(bin_dir)}"
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
        self.root.mkdir(parents=True, exist_ok=True)
        for path, what in ((bin_dir / "postgres", "the PostgreSQL binaries"), (self.root, "the cluster's folder")):
            if not reachable(path, who):
                raise DatabaseError(
                    f"user {who.name} cannot reach {what} at {path} (a parent folder shuts it out); the lab does "
                    f"not widen permissions for you: set LAB_DATA_DIR (or LAB_PG_BIN) to a place {who.name} can "
                    f"reach, or set DATABASE_URL"
                )
        password_file = self.root / "password"
        if (pgdata / "PG_VERSION").exists() and password_file.exists():
            _refuse_if_running(pgdata)
            self.password = password_file.read_text().strip()
            return
        if pgdata.exists():  # a cluster cut off half-way through initdb: start again
            shutil.rmtree(pgdata)
        self.password = secrets.token_urlsafe(24)
        started = time.perf_counter()
        _initdb(bin_dir, who, pgdata, self.password)
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
        self.proc = _spawn_as(who, cmd, self.log_path)

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + self.ready_timeout_s
        error: Exception | None = None
        while time.monotonic() < deadline:
            if not self.alive:
                raise DatabaseError(f"PostgreSQL exited during start-up (code {self.proc.returncode})\n{self.log_tail()}")
            try:
                with psycopg.connect(self.url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError as e:
                error = e
                if self.external:
                    raise DatabaseError(f"cannot connect to DATABASE_URL's server: {e}") from e
            time.sleep(0.05)
        raise DatabaseError(f"PostgreSQL did not accept connections within {self.ready_timeout_s:.0f} s ({error})\n"
                            f"{self.log_tail()}")  # fmt: skip

    def stop(self) -> None:
        """Fast shutdown (SIGINT: clients are disconnected, data is flushed), then the whole tree if anything is left."""
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    self.proc.send_signal(signal.SIGINT)
                    self.proc.wait(timeout=15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            procs.stop_tree(self.proc)
        _running.discard(self)

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


def _initdb(bin_dir: Path, who: Account, pgdata: Path, password: str) -> None:
    pgdata.mkdir(mode=0o700)
    pwfile = pgdata.parent / f".pwfile-{secrets.token_hex(4)}"
    fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(password + "\n")
    try:
        if not who.is_self:  # the data folder and the password belong to the user that runs the server
            os.chown(pgdata, who.uid, who.gid)
            os.chown(pwfile, who.uid, who.gid)
        cmd = [str(bin_dir / "initdb"), "-D", str(pgdata), "-U", DB_USER, "--pwfile", str(pwfile),
               "--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C", "--no-instructions"]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=pgdata.parent, **who.popen_kw())
        if out.returncode != 0:
            shutil.rmtree(pgdata, ignore_errors=True)
            raise DatabaseError(f"initdb failed (code {out.returncode}):\n{out.stdout}\n{out.stderr}")
    finally:
        pwfile.unlink(missing_ok=True)


def _refuse_if_running(pgdata: Path) -> None:
    """A live postmaster on this folder belongs to another notebook or batch: say so rather than fight it."""
    pid_file = pgdata / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        import psutil

        if "postgres" in psutil.Process(pid).name():
            raise DatabaseError(
                f"another process (PostgreSQL pid {pid}) is already running the cluster in {pgdata}: stop that "
                f"notebook's database first, or give this one its own folder with LAB_DATA_DIR"
            )
    except psutil.NoSuchProcess:
        pass  # a stale pid file from a hard kill: PostgreSQL cleans it up itself


def _spawn_as(who: Account, cmd: list[str], log_path: Path) -> subprocess.Popen:
    """Like procs.spawn (own session, output to the log, dies with its owner), but run as `who`, and the
    signal on the owner's death is SIGINT, PostgreSQL's fast shutdown (its SIGTERM waits for every client)."""
    parent = os.getpid()
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
    try:
        # Popen changes the user before preexec_fn runs: the parent-death signal survives (a change
        # of user after prctl would clear it).
        return subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd="/",
            start_new_session=True, preexec_fn=lambda: _postgres_child_setup(parent),  # noqa: PLW1509
            **who.popen_kw(),
        )  # fmt: skip
    finally:
        log.close()


def _postgres_child_setup(parent_pid: int) -> None:
    procs.die_with_parent(signal.SIGINT)
    if os.getppid() != parent_pid:
        os._exit(1)


_running: set[Database] = set()
_named: dict[str, Database] = {}


def database(name: str = "default", **kw) -> Database:
    """A cluster that lives across notebook cells: re-running the cell keeps the one already running."""
    db = Database(**kw)
    old = _named.get(name)
    if old is not None and old.alive and (old.root, old.external_url) == (db.root, db.external_url):
        return old
    if old is not None:
        old.stop()
    db.start()
    _named[name] = db
    return db


def stop_all() -> None:
    """Stop every cluster this process started."""
    for db in list(_running):
        db.stop()
    _named.clear()


atexit.register(stop_all)
