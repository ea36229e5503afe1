"""Where things live: the repository's folders, and data/ (or $LAB_DATA_DIR) for results."""

from __future__ import annotations

from pathlib import Path

from labserver import config

ROOT = Path(__file__).resolve().parent.parent
LOCUSTFILES = ROOT / "locustfiles"
NOTEBOOKS = ROOT / "notebooks"


def data_dir() -> Path:
    """data/ of the repository, unless LAB_DATA_DIR points elsewhere (tests, a second batch)."""
    return config.DATA_DIR.read() or ROOT / "data"


def runs_dir() -> Path:
    return data_dir() / "runs"


def figures_dir() -> Path:
    return data_dir() / "figures"
