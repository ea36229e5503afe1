"""Locust's garbage collector: no pass may stall every user for long (locustfiles/pattern.py, GC_THRESHOLD0)."""

import json
import subprocess
import sys

from labserver.paths import LOCUSTFILES

# A pass that frees n objects of cyclic garbage holds the process for about n µs (here, 88,000
# objects of `requests` garbage took 54-110 ms), and no reply is read meanwhile. 10,000 keeps a
# pass short beside the shortest wait a lesson asks for (10 ms).
MOST_FREED_PER_PASS = 10_000


def test_cyclic_garbage_is_freed_in_short_passes_once_a_plan_starts():
    # In a process of its own: importing Locust patches the process with gevent. Each "request"
    # leaves a cycle of 15 objects behind, as `requests` leaves its own, for 30,000 requests.
    code = f"""
import gc, importlib.util, json, sys
sys.path.insert(0, {str(LOCUSTFILES)!r})  # as Locust puts the locustfile's folder first
spec = importlib.util.spec_from_file_location("pattern", {str(LOCUSTFILES / "pattern.py")!r})
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
m.start_plan([])
freed = []
gc.callbacks.append(lambda phase, info: phase == "stop" and freed.append(info["collected"]))

class Node:
    pass

def one_request():
    nodes = [Node() for _ in range(15)]  # with their dicts: ~45 objects, all in one cycle
    for a, b in zip(nodes, nodes[1:] + nodes[:1]):
        a.next = b

for _ in range(30_000):
    one_request()
print(json.dumps({{"frozen": gc.get_freeze_count(), "freed": freed}}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=120, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["frozen"] > 0  # what the imports made is out of every pass
    assert max(result["freed"]) <= MOST_FREED_PER_PASS, f"a pass freed {max(result['freed']):,} objects at once"
    assert sum(result["freed"]) > 0.9 * 30_000 * 15  # the garbage was collected: nothing piles up unfreed
