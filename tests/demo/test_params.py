"""Bad input never gets a 5xx: the app's own OpenAPI fuzzed with schemathesis, and bounds checked as properties.

schemathesis reads the schema the app publishes and, for every operation, generates valid
and invalid query strings (boundary values, wrong types, huge numbers, missing and extra
parameters) with Hypothesis. Requests go in-process through ASGI: no network, no server
process. Every response must be below 500 and conform to the schema.

The work itself is shrunk (fib → abs, waits capped at 1 ms) so that hundreds of cases take
seconds: what is under test is how the app takes its input, not fib or sleep (test_patterns.py
runs those for real). The process pool is real, with one child.
"""

from __future__ import annotations

import sys
from collections import Counter

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error, positive_data_acceptance
from schemathesis.python import asgi

from labserver.demo import work
from labserver.demo.app import create_app
from labserver.demo.settings import Settings

pytestmark = pytest.mark.slow  # a process-pool child, and a few seconds of full CPU

TRIED: Counter[str] = Counter()  # cases sent, per operation
SERVER_ERRORS: Counter[str] = Counter()  # 5xx answers seen, per operation
MIN_CASES = 20  # per operation: fewer would mean the fuzzer did not really run


@pytest.fixture(scope="module")
def app():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(work.Work, "io_s", property(lambda w: min(w.io_ms, 1) / 1000))
        for name, module in list(sys.modules.items()):
            if name.startswith("labserver.demo.patterns.") and hasattr(module, "fib"):
                mp.setattr(module, "fib", abs)  # a builtin: the process pool can send it to its child
        yield create_app(Settings(procs=1))


@pytest.fixture(scope="module", autouse=True)
def lifespans():
    yield
    asgi.shutdown_lifespans()  # each app's lifespan shuts its process pool down, waiting for it


# The schema is read at import from an app without a process pool (same routes, no child
# process at collection); the cases are sent to the `app` fixture, which has one.
CONFIG = schemathesis.Config.from_dict({"generation": {"mode": "all", "max-examples": 60, "database": "none"}})
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(Settings(procs=0)), config=CONFIG)


# Answers that this server's make-up gives to valid input, whatever it is: no interpreter pool on this Python
# (501), no other service to call (503), a call that always times out (504). Their input is still checked
# first, and bad input gets its 422.
CALLING = ("callnew", "callreused", "fanout", "fanoutbounded")
BY_MAKE_UP = {"GET /interpreterpool": 501} | {f"GET /{p}": 503 for p in CALLING}
BY_MAKE_UP |= {"GET /gathertimeout": 504, "GET /taskgroup": 504}  # one of their calls always times out


@schema.parametrize()
def test_no_input_gets_a_server_error(case, app):
    response = case.call(app=app)
    TRIED[case.operation.label] += 1
    by_make_up = response.status_code == BY_MAKE_UP.get(case.operation.label)
    if response.status_code >= 500 and not by_make_up:
        SERVER_ERRORS[case.operation.label] += 1
    # Every check but one: valid-by-schema input may still be refused, because the schema cannot
    # express the bounds on a whole request (tasks × io_ms, tasks × fib(cpu_n)); those get a 422.
    excluded = [positive_data_acceptance, *([not_a_server_error] if by_make_up else [])]
    case.validate_response(response, excluded_checks=excluded)


def test_every_operation_was_fuzzed(app, capsys):
    # Runs after the fuzz above (pytest keeps the file's order); run the whole module.
    with capsys.disabled():
        print(f"\nfuzz: {sum(TRIED.values())} cases over {len(TRIED)} operations, "
              f"{sum(SERVER_ERRORS.values())} answered 5xx")  # fmt: skip
    paths = app.openapi()["paths"]
    operations = {f"GET {path}" for path in paths}
    assert operations <= set(TRIED), f"not fuzzed: {sorted(operations - set(TRIED))}"
    with_parameters = {f"GET {path}" for path, item in paths.items() if item["get"].get("parameters")}
    assert with_parameters, "the patterns take query parameters"
    assert all(TRIED[op] >= MIN_CASES for op in with_parameters), dict(TRIED)
    assert not SERVER_ERRORS, dict(SERVER_ERRORS)


# The bounds of DESIGN.md, as properties: any value outside gets a 422 that names the parameter and the bound.
BOUNDS = {"tasks": (1, work.TASKS_MAX), "io_ms": (0, work.IO_MS_MAX), "cpu_n": (0, work.CPU_N_MAX)}


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app) as c:
        yield c


def _outside(low: int, high: int) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(max_value=low - 1), st.integers(min_value=high + 1))


@st.composite
def out_of_range(draw) -> tuple[str, str, int, int]:
    pattern = draw(st.sampled_from(["sequential", "gather", "threadpool", "processpool", "blocking"]))
    name = draw(st.sampled_from(sorted(BOUNDS)))
    low, high = BOUNDS[name]
    value = draw(_outside(low, high))
    return pattern, name, value, low if value < low else high


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(out_of_range())
def test_out_of_range_gets_a_422_naming_the_bound(client, drawn):
    pattern, name, value, bound = drawn
    r = client.get(f"/{pattern}", params={name: value})
    assert r.status_code == 422, r.text
    problems = [d for d in r.json()["detail"] if name in d["loc"]]
    assert problems, r.text
    assert any(str(bound) in d["msg"] for d in problems), r.text


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tasks=st.integers(1, work.TASKS_MAX), io_ms=st.integers(0, work.IO_MS_MAX))
def test_the_total_wait_is_bounded(client, tasks, io_ms):
    r = client.get("/gather", params={"tasks": tasks, "io_ms": io_ms})
    if tasks * io_ms <= work.TOTAL_IO_MS_MAX:
        assert r.status_code == 200, r.text
    else:
        assert r.status_code == 422, r.text
        assert str(work.TOTAL_IO_MS_MAX) in r.text


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tasks=st.integers(1, work.TASKS_MAX), cpu_n=st.integers(0, work.CPU_N_MAX))
def test_the_total_cpu_is_bounded(client, tasks, cpu_n):
    r = client.get("/threadpool", params={"tasks": tasks, "cpu_n": cpu_n})
    if tasks * work.fib_calls(cpu_n) <= work.CPU_CALLS_MAX:
        assert r.status_code == 200, r.text
    else:
        assert r.status_code == 422, r.text
        assert f"fib({work.CPU_N_MAX})" in r.text
