"""Whether this process is a notebook's kernel, and who draws a plan there: the harness draws nothing itself.

labserver/__init__.py, above every layer, registers the live chart (charts/live.py) with
`use`; run_plan asks `view()` for a watcher when a plan starts. Imported by `import labserver`,
in every uvicorn worker and pool child too: nothing but `sys` and `warnings`.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

_view: Callable[[], object] | None = None


def use(view: Callable[[], object]) -> None:
    """Let `view()` make the watcher (harness/plans/feed.py) of every plan that starts in a notebook."""
    global _view
    _view = view


def view() -> object:
    """The registered watcher for a plan starting now, or None outside a notebook (or with none registered).

    A view that cannot be made is a warning, never a failed measurement.
    """
    if _view is None or not in_notebook():
        return None
    try:
        return _view()
    except Exception as e:
        warnings.warn(f"no live view for this plan: {e!r}", RuntimeWarning, stacklevel=2)
        return None


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (JupyterLab, papermill); asks IPython only if it is loaded already."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None
