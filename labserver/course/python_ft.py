"""`make python-ft`: a free-threaded CPython for lesson 10, found or made, and the server's environment on it.

Where none is found (harness/servers/interpreters.py says where it looks), `uv python install 3.14t` gets
one when uv is installed and can reach its downloads; otherwise CPython is built from the source
Debian's archive serves (a package registry this machine reaches), into the cache folder outside
the repository, where later runs and clones find it. Then a virtual environment of that
interpreter gets the server's pinned dependencies (requirements-freethreaded.txt). pydantic-core
comes as a wheel only: compiling it needs Rust crates from crates.io, which fails after minutes;
uvloop and httptools compile (C) where they have no wheel for the interpreter.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

from labserver.harness.servers import interpreters
from labserver.harness.servers.interpreters import BUILD_VERSION, Interpreter, NoFreeThreadedPython
from labserver.paths import ROOT

SOURCE_URL = f"http://deb.debian.org/debian/pool/main/p/python3.13/python3.13_{BUILD_VERSION}.orig.tar.xz"
SOURCE_SHA256 = "93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640"


def say(text: str, started: float | None = None) -> None:
    took = f" ({time.perf_counter() - started:.0f} s)" if started is not None else ""
    print(f"python-ft: {text}{took}", flush=True)


def run(command: list[str], log: Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    """Run `command`, its output appended to `log`; on failure raise, showing the log's tail."""
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        code = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise SystemExit(f"python-ft: `{' '.join(command[:3])} ...` failed (exit {code}); last lines of {log}:\n{tail}")


def interpreter() -> Interpreter:
    """A free-threaded Python: found, installed by uv, or built here."""
    try:
        found = interpreters.find_free_threaded()
        say(f"found Python {found.label} at {found.path}")
        return found
    except NoFreeThreadedPython:
        pass
    if shutil.which("uv"):
        started = time.perf_counter()
        if subprocess.run(["uv", "python", "install", "3.14t"]).returncode == 0:
            say("uv installed Python 3.14t", started)
            return interpreters.find_free_threaded()
        say("uv could not install Python 3.14t; building CPython from source instead")
    return build()


def build() -> Interpreter:
    """Download, check, configure, compile and install CPython with --disable-gil into the cache."""
    target = interpreters.built_path()
    prefix = target.parent.parent
    cache = interpreters.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    log = cache / f"build-{BUILD_VERSION}t.log"
    log.write_text("")
    started = time.perf_counter()
    tarball = fetch(cache)
    with tempfile.TemporaryDirectory(dir=cache, prefix="build-") as work:
        with tarfile.open(tarball) as tar:
            tar.extractall(work, filter="data")
        source = Path(work) / f"Python-{BUILD_VERSION}"
        jobs = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
        say(f"configuring CPython {BUILD_VERSION} --disable-gil (log: {log})")
        flags = ["--disable-gil", "--with-ensurepip=install", f"--prefix={prefix}"]
        run(["./configure", *flags], log, cwd=source)
        say(f"compiling with {jobs} jobs (about 2 minutes on 2 cores)", started)
        run(["make", f"-j{jobs}"], log, cwd=source)
        say("installing", started)
        run(["make", "install"], log, cwd=source)
    built = interpreters.probe(target)
    if not built.free_threaded:
        raise SystemExit(f"python-ft: {target} was built, but with the GIL: see {log}")
    say(f"built Python {built.label} at {target}", started)
    return built


def fetch(cache: Path) -> Path:
    """CPython's source tarball, downloaded once and checked against its known SHA-256."""
    tarball = cache / Path(SOURCE_URL).name
    if not tarball.exists() or _sha256(tarball) != SOURCE_SHA256:
        started = time.perf_counter()
        say(f"downloading {SOURCE_URL}")
        partial = tarball.with_suffix(".part")
        tarball.unlink(missing_ok=True)  # one that fails its check is never used: no stale copy stays beside it
        good = False
        try:
            with urllib.request.urlopen(SOURCE_URL, timeout=60) as response, partial.open("wb") as out:
                shutil.copyfileobj(response, out)
            good = _sha256(partial) == SOURCE_SHA256
        except OSError as e:
            raise SystemExit(f"python-ft: could not download {SOURCE_URL}: {e}; nothing was built") from None
        finally:
            if not good:  # other bytes, or cut short (an error, Ctrl-C): the next run downloads it again
                partial.unlink(missing_ok=True)
        if not good:
            raise SystemExit(f"python-ft: {SOURCE_URL} does not have the expected SHA-256; nothing was built")
        partial.rename(tarball)
        say(f"downloaded {tarball.stat().st_size / 1e6:.1f} MB", started)
    return tarball


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def server_env(found: Interpreter) -> Path:
    """The virtual environment of the server's dependencies on `found`, made once per pin set."""
    folder = interpreters.server_env_dir(found)
    python = folder / "bin" / "python"
    if interpreters.server_python(found) is not None:
        say(f"server environment ready: {folder}")
        return python
    started = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)  # a half-made one from an interrupted run
    log = interpreters.cache_dir() / "server-env.log"
    log.write_text("")
    run([str(found.path), "-m", "venv", str(folder)], log)
    pins = str(interpreters.SERVER_REQUIREMENTS)
    run([str(python), "-m", "pip", "install", "--quiet", "--only-binary=pydantic-core", "-r", pins], log)
    (folder / ".installed").touch()
    say(f"server environment made: {folder}", started)
    return python


# What the server loads: an extension among them that has not declared it runs without the GIL turns it
# back on at import, which a bare start-up (`interpreters.probe`) never shows.
SERVER_IMPORTS = "import sys, labserver.demo.app, uvicorn, uvloop, httptools, pydantic_core, psutil"


def gil_after_imports(python: Path) -> str | None:
    """None where `python` still runs without the GIL once the server's modules are loaded; else what it said."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    script = f"{SERVER_IMPORTS}; print(sys._is_gil_enabled())"
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=120, env=env)
    if done.returncode == 0 and done.stdout.strip() == "False":
        return None
    return (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}")[-2000:]


def main() -> None:
    started = time.perf_counter()
    python = server_env(interpreter())
    served = interpreters.probe(python)
    turned_on = gil_after_imports(python)
    if turned_on is not None:
        say(f"the server's modules do not load on {python} (Python {served.label}) with the GIL off:\n{turned_on}")
        sys.exit(1)
    say(f"ready: {python} (Python {served.label}, the GIL off with the server's modules loaded)", started)


if __name__ == "__main__":
    main()
