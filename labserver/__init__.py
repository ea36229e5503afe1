"""Concurrency Lab: the demo server and the tooling the lessons call.

Names are imported on first use (PEP 562): process-pool children and uvicorn workers
import `labserver.work` and `labserver.app`, and must not pay for pandas and seaborn.
"""

from importlib import import_module

__all__ = [
    "Claims",
    "LabServer",
    "RunResult",
    "check_sweep",
    "load_runs",
    "predict",
    "run_load",
    "run_plan",
    "running",
    "serve",
    "sweep",
]

_WHERE = {
    "Claims": "labserver.claims",
    "check_sweep": "labserver.load",
    "LabServer": "labserver.server",
    "RunResult": "labserver.results",
    "load_runs": "labserver.results",
    "predict": "labserver.model",
    "run_load": "labserver.load",
    "run_plan": "labserver.load",
    "running": "labserver.server",
    "serve": "labserver.server",
    "sweep": "labserver.load",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'labserver' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)
