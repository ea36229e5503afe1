"""Concurrency Lab: the demo server and the tooling the lessons call.

The folders are the architecture, and imports run one way (checked by `lint-imports`):

    course/    batch, bench, claims, profiles, the articles' figures, the summary
    charts/  postgres/  clients/    charts; lesson 07's and lesson 06's integrations
    harness/   owned processes, the server launcher, Locust plans, records, runs on disk
    theory/    predictions: Little's law, cores and the GIL, timeouts, clients, pools
    demo/      what uvicorn workers and pool children import: the app, patterns, work

Names are imported on first use (PEP 562): process-pool children and uvicorn workers
import `labserver.demo`, and must not pay for pandas and seaborn.

Here, above every layer, the harness gets the notebook's live chart of a plan (charts/live.py):
the harness draws nothing and may not import charts. Registering imports harness/plans/notebook.py
(two modules of the standard library); the chart is imported when a plan starts in a notebook, and outside one nothing
is drawn and nothing is imported from IPython.
"""

from importlib import import_module

from labserver.harness.plans import notebook as _notebook


def _live_chart():
    """The running cell's live chart, for a plan started in a notebook (harness/plans/notebook.py asks only there)."""
    from labserver.charts import live

    return live.for_this_cell()


_notebook.use(_live_chart)

__all__ = [
    "Claims",
    "LabServer",
    "RemoteServer",
    "RunResult",
    "Workload",
    "check_sweep",
    "load_runs",
    "predict",
    "run_load",
    "run_plan",
    "running",
    "serve",
    "show_diff",
    "show_source",
    "sweep",
]

_WHERE = {
    "Claims": "labserver.course.claims",
    "check_sweep": "labserver.harness.load.checks",
    "LabServer": "labserver.harness.servers.launcher",
    "RemoteServer": "labserver.harness.servers.remote",
    "RunResult": "labserver.harness.rows.results",
    "Workload": "labserver.theory.workload",
    "load_runs": "labserver.harness.rows.results",
    "predict": "labserver.theory.model",
    "run_load": "labserver.harness.load.run",
    "run_plan": "labserver.harness.load.run",
    "running": "labserver.harness.servers.launcher",
    "serve": "labserver.harness.servers.launcher",
    "show_diff": "labserver.course.source",
    "show_source": "labserver.course.source",
    "sweep": "labserver.harness.load.run",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'labserver' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)
