import math
import os
import time

import pytest

from labserver.demo.work import fib
from labserver.harness.processes import machine, probe
from labserver.harness.processes.machine import MachineMeter, busy_seconds, stolen_seconds, wait_until_quiet
from labserver.harness.processes.meters import CpuMeter
from labserver.harness.processes.scheduler import main_thread_seconds, thread_switches, waited_seconds


def test_too_few_samples_is_nan():
    meter = CpuMeter(os.getpid())
    meter.sample()
    assert all(math.isnan(x) for x in meter.usage(0, float("inf")))


def test_busy_process_uses_cpu():
    meter = CpuMeter(os.getpid())
    meter.sample()
    # CPU times advance in clock ticks (10 ms): work until a few have passed, however fast the machine
    started = time.process_time()
    while time.process_time() - started < 0.05:
        fib(20)
    meter.sample()
    cores, busiest = meter.usage(0, float("inf"))
    assert cores > 0
    assert busiest <= cores


def test_samples_outside_the_window_are_ignored():
    meter = CpuMeter(os.getpid())
    meter.sample()
    meter.sample()
    t = meter.samples[-1][0]
    assert math.isnan(meter.usage(t + 1, t + 2)[0])


def test_a_missing_process_has_no_samples():
    meter = CpuMeter(2**22 + 12345)  # above the kernel's pid_max default: never a live process
    meter.sample()
    meter.sample()
    assert math.isnan(meter.usage(0, float("inf"))[0])


def test_two_busy_processes_on_one_cpu_wait_for_it_in_turn():
    import subprocess
    import sys

    import pytest

    if math.isnan(waited_seconds(os.getpid())):
        pytest.skip("this OS does not say how long a thread waited for a CPU")
    cpu = min(os.sched_getaffinity(0))
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
    hogs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    try:
        for hog in hogs:
            os.sched_setaffinity(hog.pid, {cpu})  # one CPU for both: each is ready while the other runs
        meter = CpuMeter(hogs[0].pid, tree=False)
        meter.sample()
        time.sleep(0.3)
        meter.sample()
        waited = meter.waited(0, float("inf"))
        assert set(waited) == {hogs[0].pid}
        assert waited[hogs[0].pid] > 0
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def test_the_main_thread_s_cpu_time_grows_as_it_runs():
    import pytest

    ran, waited = main_thread_seconds(os.getpid())
    if math.isnan(ran):
        pytest.skip("this OS does not say how long a thread ran")
    started = time.process_time()
    while time.process_time() - started < 0.05:  # this thread computes for 50 ms
        pass
    assert main_thread_seconds(os.getpid())[0] >= ran + 0.04 and waited >= 0


def test_a_missing_process_never_waited():
    assert math.isnan(waited_seconds(2**22 + 12345))
    assert all(math.isnan(x) for x in main_thread_seconds(2**22 + 12345))
    meter = CpuMeter(2**22 + 12345)
    meter.sample()
    meter.sample()
    assert meter.waited(0, float("inf")) == {}


def test_machine_meter_sees_a_busy_process():
    meter = MachineMeter()
    meter.sample()
    until = time.monotonic() + 0.3  # busy long enough for the kernel's 10 ms ticks to add up
    while time.monotonic() < until:
        fib(15)
    meter.sample()
    cores = meter.usage(0, float("inf"))
    assert 0 < cores <= (os.cpu_count() or 1) + 0.2  # a tick or two of rounding either way


def test_machine_meter_needs_two_samples():
    meter = MachineMeter()
    meter.sample()
    assert math.isnan(meter.usage(0, float("inf")))
    assert busy_seconds() > 0


def test_wait_until_quiet_gives_up_after_its_timeout():
    # at most zero cores busy never happens while this test runs: it returns after the timeout
    waited = wait_until_quiet(max_cores=-1.0, timeout_s=0.2, probe_s=0.05)
    assert 0.2 <= waited < 5


def test_steal_time_is_part_of_the_busy_time_and_never_negative():
    stolen = stolen_seconds()
    assert 0 <= stolen <= busy_seconds()
    meter = MachineMeter()
    meter.sample()
    time.sleep(0.05)
    meter.sample()
    assert meter.stolen_cores(0, float("inf")) >= 0


def test_switches_count_every_thread_and_keep_those_of_threads_that_ended():
    import threading

    import pytest

    if not thread_switches(os.getpid()):
        pytest.skip("this OS does not count each thread's context switches")
    meter = CpuMeter(os.getpid(), tree=False)
    meter.sample()
    napped, go = threading.Event(), threading.Event()

    def nap():
        for _ in range(50):
            time.sleep(0.001)  # each nap: a switch
        napped.set()
        go.wait()

    napper = threading.Thread(target=nap)
    napper.start()
    napped.wait()
    meter.sample()  # while it lives
    go.set()
    napper.join()
    meter.sample()  # once it is gone
    counted = meter.per_second("switches", 0, float("inf"))[os.getpid()] * (meter.samples[-1][0] - meter.samples[0][0])
    assert counted >= 50  # its naps stay counted after it ended


def test_a_missing_process_has_no_thread_switches():
    assert thread_switches(2**22 + 12345) == {}


def test_the_probe_times_its_work_and_leaves_the_thread_where_it_may_run():
    allowed = os.sched_getaffinity(0)
    times = probe.probe_each()
    assert len(times) == len(allowed) and all(0 < ms < 1000 for ms in times)
    assert os.sched_getaffinity(0) == allowed  # put back after each core's turn


def test_a_window_s_speed_is_the_median_of_its_probes_and_needs_enough_of_them():
    meter = machine.MachineMeter()
    meter.probes = [(1.0, 0.1), (2.0, 0.3), (3.0, 0.2), (4.0, 0.9), (9.0, 5.0)]
    assert meter.probe_ms(0, 5) == pytest.approx(0.25)  # (0.2 + 0.3) / 2: the outlier does not move it
    assert math.isnan(meter.probe_ms(0, 3.5))  # three probes are too few to tell a speed
