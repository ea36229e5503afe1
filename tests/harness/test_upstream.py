"""Lesson 12's endpoints against a real other service: the lab's own server on a second port."""

import pytest

from labserver.harness.processes.procs import free_port
from labserver.harness.servers.launcher import LabServer, running


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["callnew", "callreused", "fanout", "fanoutbounded"])
def test_an_endpoint_calls_the_other_service_and_answers(pattern):
    port = free_port()
    service = LabServer(threads=4, procs=0, port=port, telemetry=False)
    app = LabServer(threads=4, procs=0, upstream=f"http://127.0.0.1:{port}", telemetry=False)
    with running([service, app]):
        body = app.get(f"/{pattern}?tasks=2&io_ms=10", timeout=30)
    assert (body["pattern"], body["tasks"], body["io_ms"]) == (pattern, 2, 10)
