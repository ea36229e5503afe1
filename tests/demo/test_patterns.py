"""Every pattern endpoint through FastAPI's TestClient, bounds included."""

import json

import pytest
from fastapi.testclient import TestClient

from labserver.demo import subinterpreters
from labserver.demo.app import create_app
from labserver.demo.patterns import PATTERNS, check_pattern
from labserver.demo.settings import Settings
from labserver.demo.work import CPU_N_MAX, IO_MS_MAX, TASKS_MAX, TOTAL_IO_MS_MAX


@pytest.fixture(scope="module")
def client():
    # `with`: the lifespan runs, so the process pool exists (and is shut down at the end)
    with TestClient(create_app(Settings(procs=1))) as client:
        yield client


# The interpreter pool needs Python 3.14, or 3.13 with its backport: elsewhere it answers 501 (tested below).
NO_INTERPRETERS = subinterpreters.executor_class()[1]
# Lesson 12's endpoints call another service: a real one, in tests/harness/test_upstream.py (slow).
CALLING = ("callnew", "callreused", "fanout", "fanoutbounded")
TIMING_OUT = ("gathertimeout", "taskgroup")  # lesson 13's: one call always times out, and they answer 504
SERVED = [
    pytest.param(p, marks=pytest.mark.skipif(bool(NO_INTERPRETERS), reason=NO_INTERPRETERS))
    if p == "interpreterpool"
    else p
    for p in PATTERNS
    if p not in CALLING + TIMING_OUT
]


def test_the_five_patterns_of_the_design_are_registered():
    assert set(PATTERNS) >= {"sequential", "gather", "threadpool", "processpool", "blocking"}


@pytest.mark.parametrize("pattern", SERVED)
def test_pattern_answers_with_its_work(client, pattern):
    r = client.get(f"/{pattern}", params={"tasks": 2, "io_ms": 1, "cpu_n": 5})
    assert r.status_code == 200
    lines = r.text.splitlines()  # a stream answers a line per chunk, each the reply
    assert len(lines) == (2 if pattern.startswith("stream") else 1)
    body = json.loads(lines[-1])
    assert body["pattern"] == pattern
    assert (body["tasks"], body["io_ms"], body["cpu_n"]) == (2, 1, 5)
    assert isinstance(body["pid"], int)


@pytest.mark.parametrize("pattern", SERVED)
def test_pattern_defaults(client, pattern):
    r = client.get(f"/{pattern}")
    assert r.status_code == 200
    body = json.loads(r.text.splitlines()[-1])
    assert (body["tasks"], body["io_ms"], body["cpu_n"]) == (1, 0, 0)


def _errors(r) -> list[tuple[str, str]]:
    assert r.status_code == 422, r.text
    return [(e["loc"][-1], e["msg"]) for e in r.json()["detail"]]


@pytest.mark.parametrize("pattern", list(PATTERNS))
@pytest.mark.parametrize(
    ("params", "name", "bound"),
    [
        ({"tasks": 0}, "tasks", "1"),
        ({"tasks": TASKS_MAX + 1}, "tasks", str(TASKS_MAX)),
        ({"io_ms": -1}, "io_ms", "0"),
        ({"io_ms": IO_MS_MAX + 1}, "io_ms", str(IO_MS_MAX)),
        ({"cpu_n": -1}, "cpu_n", "0"),
        ({"cpu_n": CPU_N_MAX + 1}, "cpu_n", str(CPU_N_MAX)),
    ],
)
def test_out_of_range_gives_422_naming_the_bound(client, pattern, params, name, bound):
    errors = _errors(client.get(f"/{pattern}", params=params))
    assert [n for n, _ in errors] == [name]
    assert bound in errors[0][1]


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_total_io_limit(client, pattern):
    # 4 × 10 s of waiting: each value is in range, their product is not
    errors = _errors(client.get(f"/{pattern}", params={"tasks": 4, "io_ms": 10_000}))
    assert [n for n, _ in errors] == ["io_ms"]
    assert str(TOTAL_IO_MS_MAX) in errors[0][1]
    assert "tasks × io_ms" in errors[0][1]


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_total_cpu_limit(client, pattern):
    errors = _errors(client.get(f"/{pattern}", params={"tasks": 5, "cpu_n": CPU_N_MAX}))
    assert [n for n, _ in errors] == ["cpu_n"]
    assert f"fib({CPU_N_MAX})" in errors[0][1]


def test_not_a_number_gives_422(client):
    errors = _errors(client.get("/gather", params={"tasks": "three"}))
    assert [n for n, _ in errors] == ["tasks"]


def test_unknown_pattern_is_not_served(client):
    assert client.get("/nonsense").status_code == 404


def test_check_pattern_lists_the_valid_names():
    assert check_pattern("gather") == "gather"
    with pytest.raises(ValueError, match="unknown pattern 'gatherr'") as e:
        check_pattern("gatherr")
    for name in PATTERNS:
        assert name in str(e.value)


def test_processpool_without_a_pool_says_so():
    with TestClient(create_app(Settings(procs=0))) as client:
        r = client.get("/processpool")
    assert r.status_code == 503
    assert "procs=0" in r.json()["detail"]


@pytest.mark.skipif(not NO_INTERPRETERS, reason="this Python has an interpreter pool")
def test_interpreterpool_where_this_python_has_none_says_what_is_missing():
    with TestClient(create_app(Settings(procs=1))) as client:
        r = client.get("/interpreterpool", params={"cpu_n": 5})
    assert r.status_code == 501
    assert NO_INTERPRETERS in r.json()["detail"]


@pytest.mark.parametrize("pattern", CALLING)
def test_an_endpoint_that_calls_another_service_says_so_when_it_has_none(pattern):
    with TestClient(create_app(Settings(procs=0))) as client:
        r = client.get(f"/{pattern}")
    assert r.status_code == 503
    assert "without an upstream service" in r.json()["detail"]


def test_watchful_stops_at_the_first_check_after_its_client_left(monkeypatch):
    import asyncio

    from fastapi import HTTPException

    from labserver.demo.patterns import watchful
    from labserver.demo.work import Work

    class Gone:  # a request whose client has closed its connection
        async def is_disconnected(self) -> bool:
            return True

    ran = []
    monkeypatch.setattr(watchful, "fib", lambda n: ran.append(n))
    with pytest.raises(HTTPException) as caught:
        asyncio.run(watchful.endpoint(Gone(), Work(tasks=5, io_ms=0, cpu_n=3)))
    assert caught.value.status_code == watchful.GONE == 499
    assert ran == [3]  # one sub-task, then the check


@pytest.mark.parametrize("pattern", TIMING_OUT)
def test_a_call_that_times_out_is_answered_504(client, pattern):
    r = client.get(f"/{pattern}", params={"tasks": 3, "io_ms": 20, "cpu_n": 5})
    assert r.status_code == 504
    assert "timed out" in r.json()["detail"]


@pytest.mark.parametrize(("pattern", "after"), [("gathertimeout", [3, 3]), ("taskgroup", [])])
def test_after_the_answer_gather_s_other_sub_tasks_run_on_and_a_task_group_s_do_not(monkeypatch, pattern, after):
    import asyncio

    from fastapi import HTTPException

    from labserver.demo import hung
    from labserver.demo.patterns import PATTERNS
    from labserver.demo.work import Work

    ran = []
    monkeypatch.setattr(hung, "fib", lambda n: ran.append(n))

    async def answer_then_wait() -> tuple[int, list]:
        with pytest.raises(HTTPException) as caught:
            await PATTERNS[pattern](Work(tasks=3, io_ms=40, cpu_n=3))
        at_answer = list(ran)
        await asyncio.sleep(0.1)  # past the other sub-tasks' 40 ms
        return caught.value.status_code, at_answer

    status, at_answer = asyncio.run(answer_then_wait())
    assert (status, at_answer) == (hung.GAVE_UP, [])  # answered at 20 ms, before any sub-task's fib
    assert ran == after
