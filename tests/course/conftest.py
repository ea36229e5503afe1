"""What the course's tests share: a machine of any number of cores, without one."""

import pytest

from labserver.demo import cpus


@pytest.fixture
def machine(monkeypatch):
    """A machine of 2 cores, or `machine(n)` of n: the lessons' sizes and the bound on Locust processes read cpus."""

    def cores(n: int) -> None:
        monkeypatch.setattr(cpus, "cores", lambda *_: float(n))
        monkeypatch.setattr(cpus, "whole_cores", lambda *_: n)

    cores(2)
    return cores
