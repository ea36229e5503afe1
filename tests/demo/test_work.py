import pytest

from labserver.demo.work import (
    CPU_N_MAX,
    IO_MS_MAX,
    TASKS_MAX,
    TOTAL_IO_MS_MAX,
    Work,
    check_bounds,
    fib,
    fib_calls,
)


@pytest.mark.parametrize(("n", "expected"), [(0, 0), (1, 1), (2, 1), (10, 55), (20, 6765)])
def test_fib(n, expected):
    assert fib(n) == expected


def test_fib_calls_counts_the_calls_fib_makes():
    calls = 0

    def counted(n):
        nonlocal calls
        calls += 1
        return n if n < 2 else counted(n - 1) + counted(n - 2)

    for n in range(15):
        calls = 0
        counted(n)
        assert fib_calls(n) == calls


def test_work_io_in_seconds():
    assert Work(tasks=3, io_ms=250).io_s == 0.25
    assert Work() == Work(tasks=1, io_ms=0, cpu_n=0)


@pytest.mark.parametrize(
    ("tasks", "io_ms", "cpu_n"),
    [(1, 0, 0), (TASKS_MAX, 0, 0), (1, IO_MS_MAX, 0), (3, IO_MS_MAX, 0), (1, 0, CPU_N_MAX), (4, 0, CPU_N_MAX)],
)
def test_within_bounds(tasks, io_ms, cpu_n):
    assert check_bounds(tasks, io_ms, cpu_n) == []


@pytest.mark.parametrize(
    ("tasks", "io_ms", "cpu_n", "name", "bound"),
    [
        (0, 0, 0, "tasks", str(TASKS_MAX)),
        (TASKS_MAX + 1, 0, 0, "tasks", str(TASKS_MAX)),
        (1, -1, 0, "io_ms", str(IO_MS_MAX)),
        (1, IO_MS_MAX + 1, 0, "io_ms", str(IO_MS_MAX)),
        (1, 0, -1, "cpu_n", str(CPU_N_MAX)),
        (1, 0, CPU_N_MAX + 1, "cpu_n", str(CPU_N_MAX)),
        (4, IO_MS_MAX, 0, "io_ms", str(TOTAL_IO_MS_MAX)),  # 40 s of waiting in one request
        (5, 0, CPU_N_MAX, "cpu_n", f"fib({CPU_N_MAX})"),  # five fib(32): past the ~2 s CPU budget
        (100, 0, 28, "cpu_n", f"fib({CPU_N_MAX})"),
    ],
)
def test_out_of_bounds_names_the_bound(tasks, io_ms, cpu_n, name, bound):
    problems = check_bounds(tasks, io_ms, cpu_n)
    assert [p for p, _ in problems] == [name]
    message = problems[0][1]
    assert name in message
    assert bound in message


def test_every_broken_bound_is_reported():
    names = [p for p, _ in check_bounds(0, -5, 99)]
    assert names == ["tasks", "io_ms", "cpu_n"]
