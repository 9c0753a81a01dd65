"""ParsedRun.scores / summaries / texts may be pyarrow Tables (canonical columns) as well as
pandas frames: the store reads the same either way and checks them the same way."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from evalcore.errors import StoreError

from .conftest import make_run


def _as_arrow(run):
    return dataclasses.replace(run, scores=pa.Table.from_pandas(run.scores, preserve_index=False),
                               summaries=pa.Table.from_pandas(run.summaries, preserve_index=False),
                               texts=pa.Table.from_pandas(run.texts, preserve_index=False))


def test_arrow_tables_ingest_like_frames(store_locations):
    kw = dict(scores=[1.0, 0.0, 0.5], answers=2, clusters=["a", "a", "b"],
              summaries=[{"task": "t", "metric": "acc", "value": 0.5, "stderr": 0.1,
                          "stderr_raw": None, "n": 3, "is_group": False}])
    a = store_locations.new("pandas").open()
    b = store_locations.new("arrow").open()
    a.ingest([make_run("r", files=["r"], **kw)])
    b.ingest([_as_arrow(make_run("r", files=["r"], **kw))])
    assert a.scores([1]).equals(b.scores([1]))
    assert a.summaries([1]).equals(b.summaries([1]))
    assert a.texts(1, "t", ["0", "1", "2"]).equals(b.texts(1, "t", ["0", "1", "2"]))
    assert a.cell_stats().equals(b.cell_stats())


def test_arrow_input_is_checked_like_frames(store):
    run = _as_arrow(make_run("r", files=["r"], scores=[1.0, float("nan")]))
    with pytest.raises(StoreError, match="is nan; expected a finite number"):
        store.ingest([run])
    bad = _as_arrow(make_run("r", files=["r"]))
    bad = dataclasses.replace(bad, scores=bad.scores.drop_columns(["cluster"]))
    with pytest.raises(StoreError, match="missing cluster"):
        store.ingest([bad])
    assert store.runs().empty
