"""Concurrency Lab: the demo server and the tooling the lessons call.

The folders are the architecture, and imports run one way (checked by `lint-imports`):

    course/    batch, bench, claims, profiles, the articles' figures, the summary
    charts/  postgres/  clients/    charts; lesson 07's and lesson 06's integrations
    harness/   owned processes, the server launcher, Locust plans, records, runs on disk
    theory/    predictions: Little's law, cores and the GIL, timeouts, clients, pools
    demo/      what uvicorn workers and pool children import: the app, patterns, work

Names are imported on first use (PEP 562): process-pool children and uvicorn workers
import `labserver.demo`, and must not pay for pandas and seaborn.
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
    "show_source",
    "sweep",
]

_WHERE = {
    "Claims": "labserver.course.claims",
    "check_sweep": "labserver.harness.load",
    "LabServer": "labserver.harness.launcher",
    "RunResult": "labserver.harness.results",
    "load_runs": "labserver.harness.results",
    "predict": "labserver.theory.model",
    "run_load": "labserver.harness.load",
    "run_plan": "labserver.harness.load",
    "running": "labserver.harness.launcher",
    "serve": "labserver.harness.launcher",
    "show_source": "labserver.course.source",
    "sweep": "labserver.harness.load",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'labserver' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)
