"""The folders of labserver/ are its layers: import-linter's contracts (pyproject.toml) hold, and can fail."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labserver.paths import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    # The contracts name `labserver`; PYTHONPATH makes `root`'s copy the one analysed.
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_layers_hold():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def copy(tmp_path) -> Path:
    shutil.copytree(ROOT / "labserver", tmp_path / "labserver", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("harness/rows/measure.py", "import seaborn", "draw no charts"),
        ("demo/work.py", "import pandas", "no data-frame library"),
        ("theory/model.py", "import urllib.request", "does no I/O"),
        ("harness/load/run.py", "from labserver.course import claims", "Layers"),
        ("demo/app.py", "from labserver.harness.processes import procs", "Layers"),
        ("charts/plots.py", "from labserver.postgres import cluster", "Layers"),
        ("harness/load/sizing.py", "from labserver.lessons import cpu_bound", "Layers"),
        ("lessons/workers.py", "from labserver.course import card", "Layers"),
        ("harness/processes/meters.py", "from labserver.harness.servers import launcher", "harness's layers"),
        ("harness/servers/addresses.py", "from labserver.harness.plans import plan", "harness's layers"),
        ("harness/plans/feed.py", "from labserver.harness.rows import records", "harness's layers"),
        ("harness/rows/columns.py", "from labserver.harness.load import validity", "harness's layers"),
        ("harness/servers/isolate.py", "from labserver.harness.load.run import run_plan", "harness's layers"),
        ("lessons/database.py", "from labserver.lessons import workers", "No lesson's module imports another's"),
        ("protocol.py", "import gevent", "protocol (protocol.py)"),
        ("protocol.py", "from labserver.harness.rows import records", "protocol (protocol.py)"),
        ("config.py", "from labserver.demo import cpus", "settings (config.py)"),
    ],
)
def test_a_wrong_import_breaks_a_contract(copy, module, line, contract):
    path = copy / "labserver" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    result = _lint(copy)
    assert result.returncode != 0
    broken = result.stdout.split("Broken contracts")[-1]
    assert contract in broken, result.stdout
