"""`pip install .` (not editable) installs the whole package: every subpackage imports from the install."""

import os
import pkgutil
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import labserver
from labserver.paths import ROOT


def _subpackages() -> list[str]:
    return ["labserver"] + [m.name for m in pkgutil.walk_packages(labserver.__path__, prefix="labserver.") if m.ispkg]


@pytest.mark.slow
def test_a_plain_install_imports_every_subpackage(tmp_path):
    # Built from a copy: setuptools writes build/ into the tree it builds, and a stale one would hide a
    # package left out of the configuration.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".*", "data", "build", "*.egg-info", "__pycache__"))
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    # No build isolation: setuptools is already in the venv, and nothing is fetched.
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, src], check=True,
                   cwd=tmp_path, env={**os.environ, "PIP_NO_INDEX": "1"})  # fmt: skip
    (wheel,) = wheels.glob("concurrency_lab-*.whl")
    packed = {Path(name).parent.as_posix().replace("/", ".") for name in zipfile.ZipFile(wheel).namelist()}
    assert set(_subpackages()) <= packed
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True, cwd=tmp_path)
    script = (
        "import importlib, sys\n"
        f"for name in {_subpackages()!r}:\n"
        "    module = importlib.import_module(name)\n"
        f"    assert module.__file__.startswith({str(site)!r}), module.__file__\n"
    )
    # From outside the checkout, with the install first on the path: the checkout cannot stand in for it.
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
