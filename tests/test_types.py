"""`make lint`'s type checker in `make test`: mypy, with pyproject.toml's settings, passes labserver/, locustfiles/."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from labserver.paths import LOCUSTFILES, ROOT

MYPY = Path(sys.executable).with_name("mypy")


def _mypy(*paths: str) -> subprocess.CompletedProcess:
    if not MYPY.exists():
        pytest.skip(f"mypy is not installed beside {sys.executable} (the `dev` extra)")
    command = [str(MYPY), "--config-file", str(ROOT / "pyproject.toml"), *paths]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_mypy_finds_nothing():
    result = _mypy()  # the folders to check come from [tool.mypy] files
    assert result.returncode == 0, result.stdout + result.stderr
    assert "locustfiles" in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]


@pytest.mark.parametrize(
    ("source", "code"),
    [
        # a float parameter passed None: the kind of slip the checker is here for
        ("def wait(timeout_s: float) -> float:\n    return timeout_s\n\nwait(None)\n", "arg-type"),
        # an Optional used without narrowing, in a function without annotations (check_untyped_defs)
        ("import re\n\ndef first(text):\n    return re.match('a', text).group(0)\n", "union-attr"),
    ],
)
def test_the_settings_catch_a_type_error(tmp_path, source, code):
    path = tmp_path / "planted.py"
    path.write_text(source)
    result = _mypy("--no-incremental", str(path))
    assert result.returncode != 0
    assert f"[{code}]" in result.stdout, result.stdout


def test_the_run_path_and_the_locust_process_declare_every_type():
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    strict = {module for o in overrides if o.get("disallow_untyped_defs") for module in o["module"]}
    assert {"labserver.harness.*", "labserver.protocol"} <= strict
    assert {path.stem for path in LOCUSTFILES.glob("*.py")} <= strict  # a new locustfile module too
