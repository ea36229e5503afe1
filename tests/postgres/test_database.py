"""Lesson 07's database: the private cluster's life cycle, the data generator, the endpoints and the model."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import psycopg
import pytest
from fastapi.testclient import TestClient

from labserver.demo.app import create_app
from labserver.demo.settings import Settings
from labserver.harness.load.checks import check_load
from labserver.paths import ROOT
from labserver.postgres import cluster as pg
from labserver.postgres import data as shopdata
from labserver.postgres import database as pgdb
from labserver.theory import pools
from labserver.theory.workload import Workload


def _folder() -> Path:
    # pytest's tmp_path sits under a private /tmp/pytest-of-<user>: run as root, the cluster's own
    # user could not enter it. A folder of the test's own, open to enter, avoids that.
    path = Path(tempfile.mkdtemp(prefix="lab-db-test-"))
    path.chmod(0o755)
    return path


def _postgres_under(folder: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if "postgres" in (p.info["name"] or "") and str(folder) in " ".join(p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            pass
    return found


def _tree_gone(pids: list[int], timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
        time.sleep(0.1)
    return alive


def _python_for(who: pg.Account) -> str | None:
    """A Python of this version that `who` can run: this one, its base, or the system's."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, getattr(sys, "_base_executable", ""), f"/usr/bin/{version}",
                      f"/usr/local/bin/{version}"):  # fmt: skip
        if candidate and Path(candidate).exists() and pg.reachable(Path(candidate).resolve(), who):
            return candidate
    return None


@pytest.fixture(scope="module")
def cluster():
    folder = _folder()
    database = pgdb.Database(root=folder / "db").start()
    try:
        yield database
    finally:
        database.stop()
        shutil.rmtree(folder, ignore_errors=True)


# A tiny shop whose answers are known by heart.
TINY = """
INSERT INTO users VALUES (1, 'ann', 'ann@example.com'), (2, 'bob', 'bob@example.com'), (3, 'cy', 'cy@example.com');
INSERT INTO products VALUES (1, 'Alpha', 1.50), (2, 'Beta', 2.00), (3, 'Gamma', 9.99);
INSERT INTO orders VALUES (10, 1, 'paid'), (11, 1, 'pending'), (12, 2, 'refunded');
INSERT INTO order_items VALUES (100, 10, 1, 2, 1.50), (101, 10, 2, 1, 2.00), (102, 11, 1, 3, 1.50),
                               (103, 12, 3, 5, 9.99);
"""


@pytest.fixture(scope="module")
def tiny_app(cluster):
    import psycopg

    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS tiny CASCADE")
        conn.execute("CREATE SCHEMA tiny")
        conn.execute("SET search_path = tiny")
        conn.execute(shopdata.TABLES)
        conn.execute(TINY)
    shop = shopdata.Shop(url=cluster.url, schema="tiny", scale=0, rows={}, size_mb=0, build_s=0, built_now=False)
    settings = Settings(database_url=shop.conninfo, db_pool=2, procs=0)
    with TestClient(create_app(settings)) as client:
        yield client


# --- the cluster -------------------------------------------------------------------------------


@pytest.mark.slow
def test_cluster_starts_answers_and_leaves_nothing_running():
    import psycopg

    folder = _folder()
    try:
        with pgdb.Database(root=folder / "db") as database:
            with psycopg.connect(database.url) as conn:
                assert conn.execute("SELECT current_user").fetchone()[0] == pg.DB_USER
            tree = pgdb.procs.tree(database.proc.pid)
            pids = [p.pid for p in tree]
            assert len(pids) > 1  # the postmaster and its helpers
            if os.geteuid() == 0:  # PostgreSQL refuses root: it runs as the lab's own user
                users = set()
                for p in tree:
                    with contextlib.suppress(psutil.NoSuchProcess):  # a helper may end meanwhile
                        users.add(p.username())
                assert users == {pg.RUN_AS}
        assert _tree_gone(pids) == []
        assert _postgres_under(folder) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_cluster_is_reused_and_listens_on_loopback_only(cluster):
    assert cluster.init_s is None or cluster.init_s > 0
    listening = {c.laddr.ip for c in psutil.Process(cluster.proc.pid).net_connections("tcp") if c.status == "LISTEN"}
    assert listening == {"127.0.0.1"}
    again = pgdb.Database(root=cluster.root)
    with pytest.raises(pgdb.DatabaseError, match="already running"):
        again.start()  # a second owner of the same folder is refused, not started beside it


@pytest.mark.slow
def test_cluster_dies_with_its_owner():
    folder = _folder()
    script = (
        "from labserver.postgres.database import Database; "
        f"d = Database(root={str(folder / 'db')!r}).start(); print(d.proc.pid)"
    )
    try:
        owner = subprocess.Popen([sys.executable, "-c", script + "; import time; time.sleep(60)"],
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        postmaster = int(owner.stdout.readline())
        owner.send_signal(signal.SIGKILL)  # no clean-up code runs: only the parent-death signal
        owner.wait()
        assert _tree_gone([postmaster]) == []
        assert _postgres_under(folder) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_cluster_as_the_other_kind_of_user():
    """Root runs PostgreSQL as the lab's system user; a normal user runs it as itself. Test the side we are not on."""
    if os.geteuid() != 0:
        pytest.skip("the root path needs root (CI runs as root and tests the normal-user path here)")
    who = pg.account()  # creates the lab's system user if missing: it stands in for a normal user
    python = _python_for(who)
    if python is None:
        pytest.skip(f"no Python {sys.version_info.major}.{sys.version_info.minor} that {who.name} can run")
    # The other user imports the lab and its packages from this checkout; a clone in a private
    # folder (mktemp -d) is closed to it, as it would be to any other user of the machine.
    code = [ROOT, *map(Path, site.getsitepackages())]
    closed = [str(path) for path in code if not pg.reachable(path, who)]
    if closed:
        pytest.skip(f"{who.name} cannot enter {closed[0]} (a parent folder is private)")
    folder = _folder()
    os.chown(folder, who.uid, who.gid)  # the normal user's own data folder, private to it
    folder.chmod(0o700)
    script = textwrap.dedent(f"""
        import os, psutil, psycopg
        from labserver.postgres.database import Database
        assert os.geteuid() != 0
        with Database(root={str(folder / "db")!r}) as d:
            with psycopg.connect(d.url) as conn:
                conn.execute("SELECT 1")
            tree = [p.pid for p in psutil.Process(d.proc.pid).children(recursive=True)] + [d.proc.pid]
        print(*tree)
    """)
    try:
        # This venv's packages, from a Python the user can run (the venv's own may sit under /root).
        env = {**os.environ, "HOME": str(folder), "PYTHONPATH": os.pathsep.join([str(ROOT), *site.getsitepackages()])}
        out = subprocess.run([python, "-s", "-c", script], capture_output=True, text=True, timeout=120, cwd="/",
                             env=env, **who.popen_kw())  # fmt: skip
        assert out.returncode == 0, out.stderr
        pids = [int(pid) for pid in out.stdout.split()]
        assert len(pids) > 1
        assert _tree_gone(pids) == []
        assert _postgres_under(folder) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_private_folder_moves_the_cluster_rather_than_widening_permissions():
    if os.geteuid() != 0:
        pytest.skip("only a root run has a separate database user")
    folder = Path(tempfile.mkdtemp(prefix="lab-db-private-"))  # 0700: the database user cannot enter
    moved = None
    try:
        with pgdb.Database(root=folder / "db") as database:
            moved = database.root
            assert not moved.is_relative_to(folder)
        assert oct(folder.stat().st_mode & 0o777) == "0o700"  # untouched
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if moved is not None:
            shutil.rmtree(moved, ignore_errors=True)


@pytest.mark.slow
def test_binaries_in_a_private_folder_are_copied_with_their_libraries(monkeypatch):
    """Root with the venv in a private folder (a clone under /root or mktemp -d): the database user cannot
    reach the wheel's binaries, so the lab copies them, and the libraries they load, where it can."""
    if os.geteuid() != 0:
        pytest.skip("only a root run has a separate database user")
    wheel = pg.binaries()
    package = wheel.parent.parent
    if not (package.parent / f"{package.name}.libs").is_dir():
        pytest.skip("these binaries load no libraries of their own (not the pgserver wheel)")
    private = Path(tempfile.mkdtemp(prefix="lab-pg-private-"))  # 0700, like a root's home or mktemp -d
    public = Path(tempfile.mkdtemp(prefix="lab-pg-fallback-", dir="/var/tmp"))
    public.chmod(0o755)
    try:
        shutil.copytree(package / wheel.parent.name, private / package.name / wheel.parent.name, symlinks=True)
        shutil.copytree(package.parent / f"{package.name}.libs", private / f"{package.name}.libs", symlinks=True)
        monkeypatch.setenv("LAB_PG_BIN", str(private / package.name / wheel.parent.name / "bin"))
        monkeypatch.setattr(pg, "FALLBACK", public / "lab")
        with pgdb.Database(root=private / "db") as database, psycopg.connect(database.url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert (public / "lab" / f"postgres-{pg.major_version(wheel)}" / f"{package.name}.libs").is_dir()
        assert oct(private.stat().st_mode & 0o777) == "0o700"  # untouched
    finally:
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(public, ignore_errors=True)


def test_database_url_is_used_as_is(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://someone@db.example:5432/shop")
    database = pgdb.Database()
    assert database.external and database.url == "postgresql://someone@db.example:5432/shop"
    assert database.proc is None  # nothing of ours to start or stop


# --- the data ----------------------------------------------------------------------------------


def test_rows_follow_the_scale():
    assert shopdata.rows(1) == shopdata.FULL_ROWS
    assert shopdata.rows(0.01) == {"users": 10_000, "products": 1_000, "orders": 50_000, "order_items": 100_000}
    with pytest.raises(ValueError, match="scale"):
        shopdata.rows(0)
    assert shopdata.schema_name(0.01) != shopdata.schema_name(0.1)


@pytest.mark.slow
def test_shop_is_built_once_and_reused(cluster):
    import psycopg

    first = shopdata.ensure(cluster.url, 0.0005, progress=False)
    again = shopdata.ensure(cluster.url, 0.0005, progress=False)
    assert first.built_now and not again.built_now and again.schema == first.schema
    with psycopg.connect(first.conninfo) as conn:
        for table, n in shopdata.rows(0.0005).items():
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == n
        orphans = "SELECT count(*) FROM order_items i LEFT JOIN orders o ON o.id = i.order_id WHERE o.id IS NULL"
        assert conn.execute(orphans).fetchone()[0] == 0


# --- the endpoints -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_select_returns_the_users_orders(tiny_app, driver):
    r = tiny_app.get(f"/{driver}_select", params={"user_id": 1})
    assert r.status_code == 200
    assert [(row["id"], row["status"]) for row in r.json()["rows"]] == [(10, "paid"), (11, "pending")]
    assert tiny_app.get(f"/{driver}_select", params={"user_id": 3}).json()["rows"] == []


@pytest.mark.slow
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_simulation_runs_both_queries_then_fib(tiny_app, driver):
    body = tiny_app.get(f"/{driver}_simulation", params={"user_id": 1, "cpu_n": 10}).json()
    assert body["total_quantity"] == 6 and body["fib"] == 55
    assert [(p["product_id"], p["title"], p["quantity"]) for p in body["products"]] == [(1, "Alpha", 5), (2, "Beta", 1)]
    assert [(i["order_id"], i["product_id"], i["quantity"]) for i in body["items"]] == [
        (10, 1, 2),
        (10, 2, 1),
        (11, 1, 3),
    ]
    other = tiny_app.get(f"/{driver}_simulation", params={"user_id": 2, "io_ms": 5}).json()
    assert other["total_quantity"] == 5 and other["products"] == [{"product_id": 3, "title": "Gamma", "quantity": 5}]


@pytest.mark.slow
def test_bounds_and_pools(tiny_app):
    assert tiny_app.get("/async_select", params={"tasks": 2}).status_code == 422
    r = tiny_app.get("/sync_simulation", params={"cpu_n": 99})
    assert r.status_code == 422 and "cpu_n" in r.text
    info = tiny_app.get("/db_info").json()
    assert info["db_pool"] == 2 and info["sync"]["pool_size"] == 2 and info["async"]["pool_size"] == 2


@pytest.mark.slow
def test_each_use_of_a_connection_is_timed_from_lent_to_returned(tiny_app):
    before = tiny_app.get("/db_info").json()["held"]
    tiny_app.get("/sync_select", params={"io_ms": 20})
    tiny_app.get("/async_simulation", params={"io_ms": 20})
    after = tiny_app.get("/db_info").json()["held"]
    assert after["uses"] - before["uses"] == 3  # one SELECT, then two queries at once
    assert after["held_s"] - before["held_s"] >= 3 * 0.020  # each held its connection through its pg_sleep


def test_routes_only_with_a_database():
    paths = set(create_app(Settings(procs=0)).openapi()["paths"])
    assert not paths & {f"/{e}" for e in pools.ENDPOINTS}
    with_db = set(create_app(Settings(procs=0, database_url="host=nowhere")).openapi()["paths"])
    assert {f"/{e}" for e in pools.ENDPOINTS} | {"/db_info"} <= with_db


def test_harness_knows_the_endpoints():
    check_load(Workload("async_select", 10, duration_s=2))
    with pytest.raises(ValueError, match="unknown pattern"):
        check_load(Workload("async_selcet", 10, duration_s=2))


# --- the model ---------------------------------------------------------------------------------


def test_sync_is_bounded_by_the_smaller_pool():
    # 40 threads, 80 connections: sync stops at the thread pool, async at the connection pool
    sync = pools.predict("sync_select", users=500, service_ms=100, threads=40, db_pool=80)
    asyn = pools.predict("async_select", users=500, service_ms=100, threads=40, db_pool=80)
    assert sync.bottleneck == "thread pool" and sync.rps == pytest.approx(400)
    assert asyn.bottleneck == "connection pool" and asyn.rps == pytest.approx(800)
    # 20 connections: both wait for a connection, and tie
    sync = pools.predict("sync_select", users=500, service_ms=100, threads=40, db_pool=20)
    assert sync.bottleneck == "connection pool" and sync.rps == pytest.approx(200)
    # below both, the users set the pace: Little's law
    assert pools.predict("sync_select", users=10, service_ms=100).rps == pytest.approx(100)


def test_simulation_holds_two_connections_and_cpu_takes_over():
    p = pools.predict("async_simulation", users=500, service_ms=100, db_pool=20)
    assert p.bottleneck == "connection pool" and p.rps == pytest.approx(100)
    p = pools.predict("async_simulation", users=32, service_ms=60, db_pool=20, cpu_ms_per_request=50)
    assert p.bottleneck == "GIL (one core per worker)" and p.rps == pytest.approx(20)
    with pytest.raises(ValueError, match="sync_select"):
        pools.predict("sync_selcet", users=1, service_ms=1)


def test_convergence_depth_is_where_the_gap_stays_closed():
    assert pools.converges_at({15: 1.8, 20: 1.4, 25: 1.1, 27: 0.95}) == 25
    assert pools.converges_at({15: 1.8, 20: 1.05, 25: 1.3, 27: 0.95}) == 27  # a gap that reopens does not count
    assert pools.converges_at({15: 1.8, 20: 1.4}) is None


def test_fib_share_comes_from_the_servers_own_cpu_per_request():
    import pandas as pd

    frame = pd.DataFrame({
        "pattern": ["sync_simulation", "sync_simulation", "async_simulation", "async_simulation"],
        "cpu_n": [15, 27, 15, 27],
        "rps": [250.0, 20.0, 500.0, 20.0],  # 4 ms and 2 ms of CPU per request at fib(15), 50 ms at fib(27)
        "server_cpu": [1.0, 1.0, 1.0, 1.0],
    })  # fmt: skip
    share = pools.fib_share(frame)
    assert list(share.round(3)) == [0.0, 0.92, 0.0, 0.96]
