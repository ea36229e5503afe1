"""A worker or pool child that dies with its parent, however the parent ends.

uvicorn's workers and the process pool's children are started by the server, not by the
lab's spawner, so each asks Linux itself for a signal when its parent exits.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM, parent_pid: int | None = None) -> None:
    """Ask Linux to send `sig` to this process when its parent exits (no-op elsewhere).

    With `parent_pid`, exit at once if the parent is already gone (it died before the request).
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)
