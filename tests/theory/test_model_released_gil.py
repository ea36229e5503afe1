"""C code that lets go of the GIL (`hashed`, lesson 03): a thread pool computing on its threads' cores, GIL or not."""

import hashlib
import threading
import time

import pytest

from labserver.demo.settings import Settings
from labserver.demo.work import MIB, digest
from labserver.theory import cores, model
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.model import predict, predict_for
from labserver.theory.workload import Workload

CPU_MS = 10.0


@pytest.mark.parametrize(("users", "threads", "cores_", "bottleneck"), [
    (100, 40, 2, Bottleneck.CORES),  # 40 threads, 2 cores: the cores
    (100, 40, 16, Bottleneck.CORES),
    (100, 8, 16, Bottleneck.THREADS),  # fewer threads than cores: the threads
    (4, 40, 16, Bottleneck.USERS),
])  # fmt: skip
def test_a_digest_computes_on_the_threads_cores_under_the_gil(users, threads, cores_, bottleneck):
    w = Workload("hashed", users=users, cpu_n=4)
    p = predict(w, Settings(threads=threads, workers=1), cores=cores_, cpu_ms_per_task=CPU_MS)
    assert p.rps == pytest.approx(min(users, threads, cores_) / (CPU_MS / 1000))
    assert p.bottleneck == bottleneck
    # fib in the same pool holds the GIL: one core
    fib = predict(Workload("threadpool", users=users, cpu_n=4), Settings(threads=threads), cores=cores_,
                  cpu_ms_per_task=CPU_MS)  # fmt: skip
    assert fib.rps == pytest.approx(min(users, 1) / (CPU_MS / 1000))


def test_more_digesting_threads_than_cores_move_in_step_in_time_slices():
    # 20 users, 50 ms of sleep, 10 ms of digest on 2 cores: 20 / (0.05 + 20 x 0.01 / 2) = 133 req/s, not 2 / 0.01
    p = predict_for("hashed", users=20, io_ms=50, cpu_n=4, cpu_ms_per_task=10, threads=40, cores=2)
    assert (p.rps, p.bottleneck) == (pytest.approx(20 / 0.15), Bottleneck.SLICED)


def test_the_usable_cores_of_a_digest_are_its_threads_up_to_the_machine_s():
    assert cores.usable("hashed", threads=40, cores=8) == 8
    assert cores.usable("hashed", threads=3, cores=8) == 3
    assert cores.usable("threadpool", threads=40, cores=8) == 1


def test_work_ms_prices_a_digest_by_its_own_timing_and_fib_by_fib_s(monkeypatch):
    monkeypatch.setattr(model, "digest_ms", lambda mib: 3.0 * mib)
    assert model.work_ms("hashed", 4) == 12.0
    assert model.work_ms("threadpool", 4, lambda n: 7.0) == 7.0
    assert model.work_ms("hashed", 4, lambda n: 7.0) == 12.0  # fib's price is not a digest's


def test_digest_hashes_that_many_mib():
    assert digest(2) == hashlib.sha256(bytes(2 * MIB)).hexdigest()
    assert digest(0) == hashlib.sha256(b"").hexdigest()


def test_digest_lets_other_threads_run_python_while_it_hashes():
    # A Python loop in another thread advances while one digest runs: hashlib releases the GIL.
    digest(16)  # the buffer is made once, outside the timing
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.01)
    before = ticks
    digest(16)
    during = ticks - before
    done.set()
    counter.join()
    assert during > 0
