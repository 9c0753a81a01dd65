"""Bounded work on any zip: decompression bounded by the declared (checked) sizes whatever
the compressed stream holds, the central directory read once, and a member-count limit."""

from __future__ import annotations

import sys
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from evalcore.errors import IngestError
from evalcore.ingest import parse_paths, parse_uploads, read_uploads
from evalcore.ingest._common import Source

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_fuzz  # noqa: E402

sys.path.remove(str(ROOT / "bench"))


def _peak(fn) -> tuple[object, int]:
    tracemalloc.start()
    try:
        try:
            out = fn()
        except IngestError as exc:
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_zstd_member_declaring_size_0_is_refused_without_unpacking_it() -> None:
    """A 64 MB zstd member (a few KB packed) that declares 0 bytes: refused naming the
    member after at most a chunk, never decompressed whole (it was: read() without bound)."""
    data = bench_fuzz.zstd_size0_eval(64)
    assert len(data) < 10_000
    err, peak = _peak(lambda: parse_uploads([("bomb.eval", data)]))
    assert isinstance(err, IngestError), err
    assert err.file == "bomb.eval" and err.where == "zip member 'header.json'"
    assert "at most the 0 bytes the archive declares" in err.expected
    assert peak < 8 << 20, peak


def test_zstd_member_declaring_less_than_it_holds_is_refused_at_the_declared_size() -> None:
    header = b'{"version": 2, "status": "success", "eval": {"task": "t"}}' + b" " * 100_000
    data = bench_fuzz.zstd_zip([("header.json", header)], declared={"header.json": 1000})
    err, _ = _peak(lambda: parse_uploads([("short.eval", data)]))
    assert isinstance(err, IngestError)
    assert err.where == "zip member 'header.json'"
    assert "at most the 1,000 bytes the archive declares" in err.expected


def test_zstd_members_stream_and_check_their_crc(fixtures_dir: Path) -> None:
    """A real zstd .eval parses as before; a member declaring one byte more than it holds
    is refused (size/CRC check at its end), never taken as it is."""
    real = fixtures_dir / "inspect" / "2026-07-22T16-51-18-00-00_a2ui-v1-0-eval_nXpB6sZohVsmQgnyUD8nuj.eval"
    run = parse_paths([real])[0]
    assert run.model == "google/gemini-3.5-flash" and len(run.texts) > 0
    with zipfile.ZipFile(real) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
        info = z.getinfo("header.json")
    assert info.compress_type == 93
    from evalcore.ingest._zip import ZipArchive
    with ZipArchive(Source(name="a.eval", path=real)) as z:
        header = z.read("header.json")
    members = [(n, header) for n in names[:1]]
    bad = bench_fuzz.zstd_zip(members, declared={names[0]: len(header) + 1})
    err, _ = _peak(lambda: parse_uploads([("long.eval", bad)]))
    assert isinstance(err, IngestError) and "zstandard" in err.expected


def test_members_of_a_zip_are_listed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading every member of a 400-member zip reads its central directory once (it was
    read twice per member: 801 times), so the work is linear in the members."""
    reads = {"n": 0}
    original = zipfile.ZipFile._RealGetContents

    def counting(self):
        reads["n"] += 1
        return original(self)

    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", counting)
    data = bench_fuzz.many_members_zip(400, b"model,task,item_id,score\nm,t,1,1\n")
    batch = read_uploads([("many.zip", data)])
    assert batch.bad_files == [] and len(batch.runs) == 1 or len(batch.problems) == 0
    assert reads["n"] <= 2, reads


def test_thousands_of_members_take_linear_time() -> None:
    """1,000 and 4,000 members (under the limit): four times the members, at most about
    four times the time (it was 20 s and 198 s: quadratic)."""
    def seconds(n: int) -> float:
        data = bench_fuzz.many_members_zip(n, b"model,task,item_id,score\nm,t,1,1\n",
                                           suffix=".txt")     # listed, skipped: no parse
        sources = [("z.zip", data)]
        t0 = time.perf_counter()
        with pytest.raises(IngestError):      # no known member: refused after listing
            parse_uploads(sources)
        return time.perf_counter() - t0

    small, big = seconds(1000), seconds(4000)
    assert big < 2.0 and big < 8 * small + 0.5, (small, big)


def test_too_many_members_is_refused_before_listing_them() -> None:
    data = bench_fuzz.many_members_zip(20_000)
    assert len(data) < 3 << 20
    t0 = time.perf_counter()
    err, peak = _peak(lambda: parse_uploads([("many.zip", data)]))
    assert isinstance(err, IngestError)
    assert time.perf_counter() - t0 < 5
    assert err.file == "many.zip" and err.where == "zip central directory"
    assert "at most 10,000 members" in err.expected
    assert "EVALBARS_MAX_ZIP_MEMBERS" in err.expected and "lists 20,000" in str(err)
    assert peak < 16 << 20   # no ZipInfo for 20,000 members


def test_member_count_is_not_taken_from_a_lying_end_record() -> None:
    data = bench_fuzz.many_members_zip(12_000, declared_count=5)
    err, _ = _peak(lambda: parse_uploads([("liar.zip", data)]))
    assert isinstance(err, IngestError) and "lists 12,000" in str(err)


def test_member_limit_is_set_by_its_variable_and_eval_logs_get_more(
        monkeypatch: pytest.MonkeyPatch, fixtures_dir: Path) -> None:
    monkeypatch.setenv("EVALBARS_MAX_ZIP_MEMBERS", "50")
    err, _ = _peak(lambda: parse_uploads([("z.zip", bench_fuzz.many_members_zip(60))]))
    assert isinstance(err, IngestError) and "at most 50 members" in err.expected
    # an inspect log holds a member per sample and epoch: 20 times the limit is allowed
    monkeypatch.setenv("EVALBARS_MAX_ZIP_MEMBERS", "2")
    real = fixtures_dir / "inspect" / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
    with zipfile.ZipFile(real) as z:
        assert 2 < len(z.namelist()) <= 40
    assert parse_paths([real])[0].scores is not None
