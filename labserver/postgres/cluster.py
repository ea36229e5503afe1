"""Finding PostgreSQL and running it as the right user, without changing anything else on the machine.

The binaries come from the pgserver wheel (PostgreSQL 16, installed with the lab's other
dependencies), used directly: pgserver's Python API, run as root, would add a system user and
widen the permissions of every parent folder without asking.

PostgreSQL refuses to run as root. Run as root (as CI does), the lab creates one system user
for it, `concurrency-lab-pg` (no login, no home), says so, and runs `initdb` and `postgres` as
that user. If a private parent folder (a checkout under /root, say) shuts that user out, the
lab moves the cluster, and if need be a copy of the binaries, to /var/tmp/concurrency-lab
rather than open anything up.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil

from labserver import config
from labserver.demo.lifeline import die_with_parent

RUN_AS = "concurrency-lab-pg"  # the system user that runs PostgreSQL when the lab runs as root
DB_USER = "lab"  # the cluster's superuser


class DatabaseError(RuntimeError):
    """The cluster could not be prepared or did not come up; the message says why and what to do."""


def binaries() -> Path:
    """The folder holding `initdb` and `postgres`: $LAB_PG_BIN, else pgserver's wheel, else the OS's packages."""
    chosen = config.PG_BIN.read()
    if chosen:
        return _checked_bin(chosen)
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
        [
            useradd,
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            "--comment",
            "Concurrency Lab's private PostgreSQL",
            RUN_AS,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
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


FALLBACK = Path("/var/tmp/concurrency-lab")


def reachable_root(root: Path, who: Account) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if reachable(root, who):
        return root
    _forget_orphans()
    tag = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:8]
    moved = FALLBACK / f"db-{tag}"
    _public_dir(moved)
    (moved / "origin").write_text(str(root.resolve()))
    print(f"{who.name} cannot reach {root} (a parent folder is private): the cluster lives in {moved} instead")
    return moved


def _forget_orphans() -> None:
    """Remove moved clusters whose own folder is gone (a test session's temporary data folder, say)."""
    for moved in FALLBACK.glob("db-*"):
        origin = moved / "origin"
        orphan = origin.exists() and not Path(origin.read_text()).exists()
        if orphan and not any(_running_postmaster(pgdata) for pgdata in moved.glob("pg*")):
            shutil.rmtree(moved, ignore_errors=True)


def reachable_binaries(bin_dir: Path, who: Account) -> Path:
    """`bin_dir`, or a copy of its install that `who` can reach, with the libraries its binaries load."""
    if reachable(bin_dir / "postgres", who):
        return bin_dir
    install = bin_dir.parent
    package = install.parent
    # A wheel repaired by auditwheel loads its libraries from `<package>.libs` beside the package,
    # through an RPATH relative to each binary ($ORIGIN/../../../pgserver.libs): the copy keeps
    # that layout, so the copied binaries find the copied libraries.
    copy = FALLBACK / f"postgres-{major_version(bin_dir)}"
    copied_bin = copy / package.name / install.name / "bin"
    if not (copied_bin / "postgres").exists():
        _public_dir(FALLBACK)
        print(f"{who.name} cannot reach {bin_dir} (a parent folder is private): copying PostgreSQL to {copy}")
        partial = FALLBACK / f".{copy.name}-{os.getpid()}"  # renamed into place whole: no half copy is ever used
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(install, partial / package.name / install.name, symlinks=True)
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, partial / libs.name, symlinks=True)
        partial.chmod(0o755)
        try:
            partial.rename(copy)
        except OSError:  # another run copied it first
            shutil.rmtree(partial, ignore_errors=True)
    return copied_bin


def _public_dir(path: Path) -> None:
    """A folder of the lab's own that every user may enter (and only its owner may write)."""
    for part in [*reversed(path.relative_to(FALLBACK.parent).parents), path.relative_to(FALLBACK.parent)]:
        folder = FALLBACK.parent / part
        if not folder.exists():
            folder.mkdir(mode=0o755)
            folder.chmod(0o755)  # whatever the umask


def initdb(bin_dir: Path, who: Account, pgdata: Path, password: str) -> None:
    pgdata.mkdir(mode=0o700)
    pwfile = pgdata.parent / f".pwfile-{secrets.token_hex(4)}"
    fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(password + "\n")
    try:
        if not who.is_self:  # the data folder and the password belong to the user that runs the server
            os.chown(pgdata, who.uid, who.gid)
            os.chown(pwfile, who.uid, who.gid)
        cmd = [
            str(bin_dir / "initdb"),
            "-D",
            str(pgdata),
            "-U",
            DB_USER,
            "--pwfile",
            str(pwfile),
            "--auth",
            "scram-sha-256",
            "-E",
            "UTF8",
            "--locale",
            "C",
            "--no-instructions",
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=pgdata.parent, **who.popen_kw())
        if out.returncode != 0:
            shutil.rmtree(pgdata, ignore_errors=True)
            raise DatabaseError(f"initdb failed (code {out.returncode}):\n{out.stdout}\n{out.stderr}")
    finally:
        pwfile.unlink(missing_ok=True)


def refuse_if_running(pgdata: Path) -> None:
    """A live postmaster on this folder belongs to another notebook or batch: say so rather than fight it."""
    pid = _running_postmaster(pgdata)
    if pid:
        raise DatabaseError(
            f"another process (PostgreSQL pid {pid}) is already running the cluster in {pgdata}: stop that "
            f"notebook's database first, or give this one its own folder with LAB_DATA_DIR"
        )


def _running_postmaster(pgdata: Path) -> int | None:
    """The pid of the PostgreSQL running on `pgdata`, if any (a stale pid file from a hard kill is not one)."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
        return pid if "postgres" in psutil.Process(pid).name() else None
    except (OSError, ValueError, IndexError, psutil.Error):
        return None


def spawn_as(who: Account, cmd: list[str], log_path: Path) -> subprocess.Popen:
    """Like procs.spawn (own session, output to the log, dies with its owner), but run as `who`, and the
    signal on the owner's death is SIGINT, PostgreSQL's fast shutdown (its SIGTERM waits for every client)."""
    parent = os.getpid()
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
    try:
        # Popen changes the user before preexec_fn runs: the parent-death signal survives (a change
        # of user after prctl would clear it).
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd="/",
            start_new_session=True,
            preexec_fn=lambda: _postgres_child_setup(parent),
            **who.popen_kw(),
        )
    finally:
        log.close()


def _postgres_child_setup(parent_pid: int) -> None:
    die_with_parent(signal.SIGINT)
    if os.getppid() != parent_pid:
        os._exit(1)
