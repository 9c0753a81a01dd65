"""evalcore.threads.no_huge_pages: transparent huge pages off while the block runs (the
process's own PR_GET_THP_DISABLE says so), restored after, shared by nested and concurrent
blocks, and left alone with EVALBARS_HUGE_PAGES=1."""

from __future__ import annotations

import threading

import pytest

from evalcore import threads

pytestmark = pytest.mark.skipif(threads.huge_pages_disabled() is None,
                                reason="prctl(PR_GET_THP_DISABLE) is not available here")


# what the process had (False unless a parent process turned them off: inherited)
BEFORE = threads.huge_pages_disabled()


def test_huge_pages_are_off_inside_and_restored_after():
    with threads.no_huge_pages():
        assert threads.huge_pages_disabled() is True
        with threads.no_huge_pages():   # nested: still off, and still off after it
            assert threads.huge_pages_disabled() is True
        assert threads.huge_pages_disabled() is True
    assert threads.huge_pages_disabled() is BEFORE


def test_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with threads.no_huge_pages():
            assert threads.huge_pages_disabled() is True
            raise RuntimeError("boom")
    assert threads.huge_pages_disabled() is BEFORE


def test_concurrent_blocks_restore_only_when_the_last_one_ends():
    inside, release = threading.Event(), threading.Event()

    def other():
        with threads.no_huge_pages():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(10)
    with threads.no_huge_pages():
        assert threads.huge_pages_disabled() is True
    # this block ended first: the other one still runs with huge pages off
    assert threads.huge_pages_disabled() is True
    release.set()
    t.join()
    assert threads.huge_pages_disabled() is BEFORE


def test_the_environment_keeps_huge_pages_on(monkeypatch):
    monkeypatch.setenv("EVALBARS_HUGE_PAGES", "1")
    with threads.no_huge_pages():
        assert threads.huge_pages_disabled() is BEFORE
    assert threads.huge_pages_disabled() is BEFORE
