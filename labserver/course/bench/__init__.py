"""`python -m labserver.course.bench` (`make bench`): does the lab measure the server, not itself, and at what cost?

One run measures every part and writes data/bench/latest.json plus a dated copy, one module a part:

- harness.py: the ideal async endpoint (`/sequential`, one 100 ms await) at 50, 100, 200 and 400
  users, with one Locust process and with `--processes 2`: measured beside predicted (Little's
  law, and the curve with the server's own measured CPU per request), with the CPU of Locust,
  of the server and of everything else on the machine during the measurement window. First, one
  user alone: the share of Little's law a closed loop gets with no queue at all, the request's
  round trip and the machine's timer wake-up on top of the 100 ms. A loaded run near it lost
  nothing to the harness (it may even pass it: busy processes wake up faster).
- overhead.py: median time from asking for a server to /health answering, from starting Locust
  to its first request, and per run outside its measurement window.
- batch.py: wall time of `python -m labserver.course.batch` (quick profile) and the part of it spent
  inside measurement windows.
- repeatability.py: lesson 01's headline ratio measured three times, and its spread.
- telemetry.py: the server's own sampling (every 100 ms per worker) must not move the measurement.
- live_view.py: what a notebook's live view (a frame a second) costs the busiest run, as a share
  of its throughput, over mirrored rounds with the view off and on.
  `--skip harness overhead batch repeatability telemetry scaleout` measures it alone.
- layer.py: what the lab's ASGI layer around an app of one's own (`python -m labserver measure`)
  costs the example's routes that compute, against the same app with nothing of the lab's.
- scaleout.py: Locust's workers joining a master (`python -m labserver worker`) against two Locust
  processes forked here, on one `python -m labserver serve`.

report.py holds the targets and the table; __main__.py runs the parts. The bench's own runs land
in data/bench/runs/, away from the lessons' (lesson 99 reads those). On a shared machine run it
alone (`flock /tmp/lab-measure.lock make bench`): before each run it waits until other programs
are quiet, measures a run again if they were not, and reports the cores they took meanwhile
(`other_cpu`), so that a figure taken on a busy machine shows it.
"""

PARTS = ("harness", "overhead", "batch", "repeatability", "live", "telemetry", "layer", "scaleout")

__all__ = ["PARTS"]
