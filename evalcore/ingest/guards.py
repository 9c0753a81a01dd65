"""Checks every reader's output passes: a parser's unexpected exception becomes an
``IngestError`` naming the file (``layout_guard``), and scores, summary values and answer
indices stay within the product's limits (``check_magnitudes``), also for the pieces of a
``LazyRun`` as they are read (``checked_pieces``)."""

from __future__ import annotations

import numpy as np

from evalcore.errors import IngestError
from evalcore.ingest._common import MAX_ABS_SCORE, MAX_ANSWER_IDX
from evalcore.model import LazyRun, ParsedRun


def layout_guard(name: str, parse, *args, **kwargs):
    """``parse(*args)``; a value the parser's own checks do not name (a fuzzed or
    hand-edited file: a value of an unexpected type, a number too large to convert, an index
    out of range) becomes an ``IngestError`` naming the file instead of an internal error,
    so the other files of the batch are read as usual."""
    try:
        return parse(*args, **kwargs)
    except IngestError:
        raise
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        raise IngestError(name, "file layout", "the layout this harness writes (objects, lists "
                          "and values where it puts them)",
                          f"{type(exc).__name__}: {str(exc)[:80]}") from None
    except (ValueError, OverflowError) as exc:   # ValueError includes pyarrow's ArrowInvalid
        raise IngestError(name, "a value", "values that fit (numbers within range, counts "
                          "and indices that are whole numbers of a usual size)",
                          f"{type(exc).__name__}: {str(exc)[:80]}") from None


def checked_pieces(run: LazyRun) -> LazyRun:
    """``run`` whose pieces pass ``check_magnitudes`` (and ``layout_guard``) as they are
    read."""
    read = run.pieces
    name = run.files[0].name if run.files else run.name

    def pieces():
        stream = iter(read())
        while (piece := layout_guard(name, next, stream, None)) is not None:
            check_magnitudes(piece, name)
            yield piece

    run.pieces = pieces
    return run


def check_magnitudes(run: ParsedRun, name: str | None = None) -> None:
    """Every format: item scores finite and within +-MAX_ABS_SCORE, summary values within it
    (NaN allowed: a missing value), so means and variances of what is stored stay finite.
    The parsers check with line numbers where they can; this names task, metric and item
    (and ``name`` or the run's first file)."""
    name = name or (run.files[0].name if run.files else run.name)
    sc = run.scores["score"].to_numpy(dtype="float64")
    bad = np.flatnonzero(~(np.abs(sc) <= MAX_ABS_SCORE))
    if len(bad):
        r = run.scores.iloc[int(bad[0])]
        raise IngestError(name, f"task {r['task']!r}, metric {r['metric']!r}, item "
                          f"{r['item_id']!r}", f"a finite score within +-{MAX_ABS_SCORE:g}",
                          f"found {float(sc[bad[0]])!r}")
    for col in ("value", "stderr"):
        v = run.summaries[col].to_numpy(dtype="float64")
        bad = np.flatnonzero(np.abs(v) > MAX_ABS_SCORE)
        if len(bad):
            r = run.summaries.iloc[int(bad[0])]
            raise IngestError(name, f"summary of task {r['task']!r}, metric {r['metric']!r}",
                              f"a {col} within +-{MAX_ABS_SCORE:g} or missing",
                              f"found {float(v[bad[0]])!r}")
    answer = run.scores["answer_idx"].to_numpy()
    bad = np.flatnonzero((answer < 0) | (answer > MAX_ANSWER_IDX))
    if len(bad):
        r = run.scores.iloc[int(bad[0])]
        raise IngestError(name, f"task {r['task']!r}, metric {r['metric']!r}, item "
                          f"{r['item_id']!r}", f"an answer index (epoch, sample) from 0 to "
                          f"{MAX_ANSWER_IDX:,}", f"found {int(answer[bad[0]])}")
