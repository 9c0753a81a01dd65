"""How ``compare`` reads: the shared items in a worker thread beside the protocol reads, and
the protocol diff of the tasks actually compared."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from evalcore import analysis as an
from evalcore.errors import StoreError
from tests.analysis_helpers import MemoryStore, make_run, make_store

X = (np.arange(40) % 3 != 0).astype(float)
Y = (np.arange(40) % 4 != 0).astype(float)


def _runs():
    # task "t1" compared; task "t2" planned but left out (the runs share one item of it)
    return [make_run("A", {("t1", "acc"): X, ("t2", "acc"): {"0": 1.0, "1": 0.0}},
                     protocol={"seed": 1}, task_protocol={"num_fewshot": 0}),
            make_run("B", {("t1", "acc"): Y, ("t2", "acc"): {"0": 1.0, "2": 1.0}},
                     protocol={"seed": 2}, task_protocol={"num_fewshot": 5})]


def test_one_task_left_of_two_planned_gets_that_tasks_protocol_diff(tmp_path):
    s = make_store(_runs(), tmp_path, kind="real")
    cmp = an.compare(s, "A", "B")
    assert list(cmp.per_task["task"]) == ["t1"]
    assert any("t2: 1 shared item(s); not compared" in w for w in cmp.warnings)
    want = s.protocol_diff(s.resolve_run("A"), s.resolve_run("B"), "t1")
    want = want[want["scope"].isin(["run", "t1"])].reset_index(drop=True)
    got = cmp.protocol_diff
    assert set(got["scope"]) == {"run", "t1"} and "num_fewshot" in set(got["setting"])
    assert list(got.columns) == list(want.columns)
    assert got.astype(object).values.tolist() == want.astype(object).values.tolist()


def test_the_protocol_diff_is_read_for_all_planned_tasks_then_for_the_one_compared():
    asked = []

    class Recording(MemoryStore):
        def protocol_diff(self, run_a, run_b, task=None):
            asked.append(task)
            return super().protocol_diff(run_a, run_b, task)

    assert list(an.compare(Recording(_runs()), "A", "B").per_task["task"]) == ["t1"]
    assert asked == [None, "t1"]
    asked.clear()
    an.compare(Recording(_runs()), "A", "B", task="t1")
    assert asked == ["t1"]


class _FailingPairs(MemoryStore):
    """A store whose paired read fails, and which records the threads it was read on."""

    def __init__(self, runs):
        super().__init__(runs)
        self.threads: set[str] = set()

    def paired_items(self, run_a, run_b, cells):
        self.threads.add(threading.current_thread().name)
        raise StoreError("the store is busy")


def test_the_paired_read_runs_in_a_worker_and_its_error_reaches_the_caller():
    s = _FailingPairs(_runs())
    with pytest.raises(StoreError, match="busy"):
        an.compare(s, "A", "B")
    assert s.threads and threading.current_thread().name not in s.threads


def test_a_failing_protocol_read_still_waits_for_the_paired_read():
    done = threading.Event()

    class Slow(MemoryStore):
        def paired_items(self, run_a, run_b, cells):
            out = super().paired_items(run_a, run_b, cells)
            done.set()
            return out

        def protocol_diff(self, run_a, run_b, task=None):
            raise StoreError("protocol read failed")

    with pytest.raises(StoreError, match="protocol read failed"):
        an.compare(Slow(_runs()), "A", "B")
    assert done.is_set()            # the worker's read had finished before compare raised
