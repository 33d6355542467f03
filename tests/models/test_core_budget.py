from __future__ import annotations

import threading
import time

import pytest

from eagle_rag.models.core_budget import CoreBudget

WAIT = 5.0


def _hold(
    budget: CoreBudget, cores: int, entered: threading.Event, release: threading.Event
) -> threading.Thread:
    def run() -> None:
        with budget.take(cores):
            entered.set()
            release.wait(WAIT)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_one_core_calls_run_side_by_side_and_a_whole_budget_call_waits() -> None:
    budget = CoreBudget(2)
    release = threading.Event()
    first, second, whole = threading.Event(), threading.Event(), threading.Event()
    threads = [_hold(budget, 1, first, release), _hold(budget, 1, second, release)]
    assert first.wait(WAIT) and second.wait(WAIT)  # both hold a core at once
    threads.append(_hold(budget, 2, whole, threading.Event()))
    assert not whole.wait(0.2)  # no core is free
    release.set()
    assert whole.wait(WAIT)
    for thread in threads:
        thread.join(WAIT)


def test_a_later_small_call_does_not_overtake_a_waiting_large_one() -> None:
    budget = CoreBudget(2)
    release_first = threading.Event()
    order: list[str] = []
    first = threading.Event()
    holder = _hold(budget, 1, first, release_first)
    assert first.wait(WAIT)

    def take(name: str, cores: int) -> None:
        with budget.take(cores):
            order.append(name)

    large = threading.Thread(target=take, args=("large", 2))
    large.start()
    time.sleep(0.1)  # the large call is in line, waiting for the busy core
    small = threading.Thread(target=take, args=("small", 1))
    small.start()
    time.sleep(0.2)
    assert order == []  # one core is free, but the small call waits its turn
    release_first.set()
    for thread in (holder, large, small):
        thread.join(WAIT)
    assert order == ["large", "small"]


def test_requests_are_clipped_to_the_budget() -> None:
    budget = CoreBudget(2)
    with budget.take(8) as cores:
        assert cores == 2
    with budget.take(0) as cores:
        assert cores == 1
    with pytest.raises(ValueError):
        CoreBudget(0)


def test_a_reservation_leaves_batches_the_spare_cores_and_serves_its_own_thread() -> None:
    """A document's visual extraction reserves a core: the text's batches spread over the
    other one meanwhile instead of waiting for both, and the extraction's own model calls run
    on its core even while the other is busy."""
    budget = CoreBudget(2)
    reserved, release = threading.Event(), threading.Event()
    nested: list[int] = []

    def extract() -> None:
        with budget.reserve(1):
            reserved.set()
            release.wait(WAIT)
            with budget.take(1) as cores:  # the layout model, while a batch holds the other core
                nested.append(cores)

    extraction = threading.Thread(target=extract)
    extraction.start()
    assert reserved.wait(WAIT)
    assert budget.spare == 1
    batch, batch_release = threading.Event(), threading.Event()
    batch_thread = _hold(budget, budget.spare, batch, batch_release)
    assert batch.wait(1.0)  # runs beside the reservation, on the spare core
    release.set()
    extraction.join(WAIT)
    assert nested == [1] and not extraction.is_alive()
    batch_release.set()
    batch_thread.join(WAIT)
    assert budget.spare == 2
    with budget.take(2) as cores:  # nothing left held
        assert cores == 2
