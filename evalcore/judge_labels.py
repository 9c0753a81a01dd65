"""Human labels for an LLM-judged task: a CSV ``item_id,human`` read and checked.

One row per labelled item: ``item_id`` as the harness wrote it (inspect sample id, lm_eval
doc_id), ``human`` the person's score on the judge's scale (0/1, or a number in the judge's
range). Extra columns are ignored; blank lines are skipped. Every problem raises
:class:`evalcore.errors.IngestError` naming the file, the line (the header is line 1) and
what was expected: a missing column, an unknown or duplicate item id, a label that is not a
number or lies outside the scale, fewer than ``MIN_LABELLED`` labelled items. The labels are
used per call and never written to the store.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Collection
from dataclasses import dataclass

from evalcore.errors import IngestError
from evalcore.stats.ppi import MIN_LABELLED

COLUMNS = ("item_id", "human")
MAX_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True)
class HumanLabels:
    """Labels in file order: ``item_ids[i]`` got ``values[i]``; ``source`` names the file."""

    source: str
    item_ids: tuple[str, ...]
    values: tuple[float, ...]

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.item_ids, self.values))


def _text(data: bytes | str, source: str) -> str:
    if isinstance(data, str):
        return data
    if len(data) > MAX_BYTES:
        raise IngestError(source, None, f"a labels CSV of at most {MAX_BYTES // 2 ** 20} MB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(source, f"byte {exc.start}", "UTF-8 text (a CSV item_id,human)") \
            from None


def _header(reader, source: str) -> tuple[int, int]:
    try:
        header = next(reader)
    except StopIteration:
        raise IngestError(source, "line 1", "a header line with columns item_id,human",
                          "the file is empty") from None
    names = [h.strip().lower() for h in header]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise IngestError(source, "line 1", "a header with columns item_id,human",
                          f"missing {', '.join(missing)}; found {', '.join(header)[:200]}")
    return names.index("item_id"), names.index("human")


def _value(text: str, source: str, line: int, low: float, high: float) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v):
        raise IngestError(source, f"line {line}, field human",
                          "a number (0/1 or a score on the judge's scale)", repr(text[:40]))
    if not (low <= v <= high):
        raise IngestError(source, f"line {line}, field human",
                          f"a label in [{low:g}, {high:g}] (the judge's scale)", f"got {v:g}")
    return v


def read_labels(data: bytes | str, source: str, known_ids: Collection[str], *,
                low: float, high: float, what: str = "the task",
                min_labelled: int = MIN_LABELLED) -> HumanLabels:
    """Parse and check a labels CSV against the item ids of the judged task.

    ``known_ids``: the item ids the run scored on the task; ``[low, high]``: the allowed
    label range (the judge's scale); ``what`` names the task and run in messages."""
    known = set(map(str, known_ids))
    reader = csv.reader(io.StringIO(_text(data, source)))
    at_id, at_human = _header(reader, source)
    seen: dict[str, int] = {}
    ids: list[str] = []
    values: list[float] = []
    try:
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) <= max(at_id, at_human):
                raise IngestError(source, f"line {line}", "the fields item_id and human",
                                  f"the line has {len(row)} field(s)")
            item = row[at_id].strip()
            if item not in known:
                raise IngestError(source, f"line {line}, field item_id",
                                  f"an item id of {what}", f"unknown id {item[:80]!r}")
            if item in seen:
                raise IngestError(source, f"line {line}, field item_id",
                                  "each item labelled once",
                                  f"{item[:80]!r} is labelled on line {seen[item]} too")
            seen[item] = line
            ids.append(item)
            values.append(_value(row[at_human].strip(), source, line, low, high))
    except csv.Error as exc:
        raise IngestError(source, f"line {reader.line_num}", "CSV text", str(exc)) from None
    if len(ids) < min_labelled:
        raise IngestError(source, None, f"at least {min_labelled} labelled items",
                          f"got {len(ids)}")
    return HumanLabels(source, tuple(ids), tuple(values))
