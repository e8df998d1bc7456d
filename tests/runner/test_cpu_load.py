"""The run's throttle (``harness.cpu_load``): beyond one case per CPU, a case starts only
while the CPUs are not starved; the readings behind it, from text."""

from __future__ import annotations

import threading

import pytest

from harness import cpu_load
from harness.cpu_load import Reading, Throttle, floor, pressure_reader, source_for, starved

PSI = (
    "some avg10=1.00 avg60=2.00 avg300=3.00 total={total}\nfull avg10=0 avg60=0 avg300=0 total=0\n"
)


def test_the_source_is_psi_else_the_load_average_else_nothing():
    assert source_for(has_psi=True, has_loadavg=True) == "psi"
    assert source_for(has_psi=False, has_loadavg=True) == "loadavg"
    assert source_for(has_psi=False, has_loadavg=False) == "none"


def test_starved_compares_each_source_with_its_own_limit():
    assert not starved(None)
    assert starved(Reading("psi", 0.7)) and not starved(Reading("psi", 0.69))
    assert starved(Reading("loadavg", 3.0)) and not starved(Reading("loadavg", 2.9))
    assert starved(Reading("psi", 0.5), pressure_limit=0.5)


def test_floor_is_one_case_per_cpu_and_never_zero():
    assert floor(2) == 2 and floor(0) == 1


def test_pressure_is_the_rate_of_psi_total_over_a_window(monkeypatch):
    clock = [100.0]
    total = [0]
    monkeypatch.setattr(cpu_load.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(cpu_load.os.path, "exists", lambda path: path == cpu_load.PSI_CPU)
    read = pressure_reader(cpus=2, read_file=lambda path: PSI.format(total=total[0]))
    assert read() is None  # no window yet
    clock[0], total[0] = 101.0, 800_000  # waited 0.8 s of the last 1 s
    assert read() == Reading("psi", 0.8)
    clock[0], total[0] = 101.5, 900_000  # under WINDOW_S: the last rate stands
    assert read() == Reading("psi", 0.8)
    clock[0], total[0] = 103.0, 1_000_000  # 0.2 s of 2 s
    assert read() == Reading("psi", pytest.approx(0.1))


def test_without_psi_the_load_average_per_cpu(monkeypatch):
    monkeypatch.setattr(cpu_load.os.path, "exists", lambda path: path == cpu_load.LOADAVG)
    read = pressure_reader(cpus=2, read_file=lambda path: "7.00 5.00 3.00 9/300 1234\n")
    assert read() == Reading("loadavg", 3.5)
    monkeypatch.setattr(cpu_load.os.path, "exists", lambda path: False)
    assert pressure_reader(cpus=2)() is None


@pytest.mark.timeout(30)
def test_a_start_beyond_the_floor_waits_while_starved_and_goes_when_a_case_ends():
    measured = threading.Event()

    def high() -> Reading:
        measured.set()
        return Reading("psi", 0.95)

    throttle = Throttle(cpus=2, read=high, recheck_s=60.0)
    throttle.admit()
    throttle.admit()  # the floor: two at once whatever the pressure
    assert not measured.is_set()
    admitted = threading.Event()
    third = threading.Thread(target=lambda: (throttle.admit(), admitted.set()))
    third.start()
    assert measured.wait(10)  # it measured, found the CPUs starved, and waits
    assert not admitted.is_set()
    throttle.release()  # a case ended: below the floor again
    assert admitted.wait(10)
    third.join(10)
    assert (throttle.peak, throttle.held) == (2, 1)
    assert "1 start(s) held, worst CPU pressure 95%" in throttle.summary()


@pytest.mark.timeout(30)
def test_not_starved_every_worker_starts_and_stop_frees_a_held_one():
    throttle = Throttle(cpus=1, read=lambda: Reading("psi", 0.1))
    for _ in range(4):
        throttle.admit()
    assert (throttle.peak, throttle.held) == (4, 0)
    measured = threading.Event()

    def full() -> Reading:
        measured.set()
        return Reading("psi", 1.0)

    starved_one = Throttle(cpus=1, read=full, recheck_s=60.0)
    starved_one.admit()
    done = threading.Event()
    held = threading.Thread(target=lambda: (starved_one.admit(), done.set()))
    held.start()
    assert measured.wait(10) and not done.is_set()  # held
    starved_one.stop()  # the run is stopping: nobody stays held
    assert done.wait(10)
    held.join(10)


def test_the_run_says_its_workers():
    throttle = Throttle(cpus=2, read=lambda: None)
    assert throttle.describe(4) == (
        "workers: 4 on 2 CPU(s); beyond 2 at once only while CPU pressure is under 70%"
    )
