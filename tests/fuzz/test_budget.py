"""The search's budget on an injected clock: examples, minutes, a shrink's seconds."""

from __future__ import annotations

import pytest

from harness.fuzz.budget import Budget, Stop

pytestmark = pytest.mark.timeout(30)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_spent_examples_stop_generation_but_do_not_cut_a_shrink_short():
    budget = Budget(examples=2, minutes=None, shrink_s=None, clock=Clock())
    budget.check()
    budget.spend_example()
    budget.spend_example()
    assert budget.remaining() == 0
    with pytest.raises(Stop):
        budget.check()
    assert budget.stopped and budget.stopped_by == "examples"
    assert not budget.cut_short()  # a claimed group's shrink and confirmation may finish


def test_minutes_over_stop_generation_and_cut_a_shrink_short():
    clock = Clock()
    budget = Budget(examples=None, minutes=1, shrink_s=None, clock=clock)
    clock.now += 59.9
    budget.check()
    assert not budget.cut_short()
    clock.now += 0.1
    assert budget.cut_short() and budget.shrink_over(claimed_s=0.0)
    with pytest.raises(Stop):
        budget.check()
    assert budget.stopped_by == "minutes"


def test_a_shrink_ends_after_its_seconds_counted_from_its_claim():
    clock = Clock()
    budget = Budget(examples=None, minutes=None, shrink_s=60, clock=clock)
    clock.now += 10
    claimed = budget.elapsed()
    clock.now += 59
    assert not budget.shrink_over(claimed)
    clock.now += 1
    assert budget.shrink_over(claimed)
    assert not budget.shrink_over(None)  # nothing claimed: no shrink to end


def test_the_first_reason_to_stop_is_kept_and_an_interrupt_cuts_short():
    budget = Budget(examples=None, minutes=None, shrink_s=None, clock=Clock())
    budget.stop("interrupted")
    budget.stop("examples")
    assert budget.stopped_by == "interrupted" and budget.cut_short()
