"""Fuzzing benchmark: mutated real harness outputs against the ingest path and the store.

Seeds are the real files in ``/work/shared/fixtures`` (lm_eval, inspect, HELM; or
``$EVALBARS_FIXTURES``), ``tests/fixtures/wild`` when present and ``data/demo``, plus a tidy
CSV and JSONL table made from a demo sample log. Each case takes one seed (a single file, an
lm_eval results file with one of its sample logs, or a HELM run folder) and applies one
seeded mutation:

* ``truncate``: cut at a random byte;
* ``flip``: overwrite 1-16 random bytes with random bytes;
* ``type_swap``: parse, replace a random value (dict/list entry) by a value of another kind:
  a string, list, object, null, boolean, NaN, +-Infinity, 1e308, -1e308, 1e309, 10**30, a
  control-character/HTML string;
* ``deep_nest``: wrap a random value in 100-100,000 levels of ``[``/``{``;
* ``huge_line``: insert a 1-4 MB line or string value;
* ``zip``: pack the files into a zip with one trick: a high-ratio member (zip bomb), a
  path-traversal or absolute name, a nested zip, a member whose bytes no longer match its
  CRC, a cut-off archive, an unknown compression method, junk after the members;
* ``names``: control characters (ESC, BEL, C1, bidi) and HTML in model and task names;
* ``huge_number``: a number of a JSON/JSONL value or a CSV cell replaced by an integer that
  fits no float (400 or 5,001 digits: Python refuses to convert the latter), no int64 or no
  32-bit answer index;
* ``extra_fields``: a CSV row with 1-3 fields more or 1-2 fewer than its header (other seeds:
  a huge number);

the ``zip`` tricks also include an inspect-like ``.eval`` whose zstandard ``header.json``
declares 0 bytes and unpacks to 64 MB or 1 GB (``zstd_size0``), and a zip of 20,000 small
members (``many_members``; the member limit is 10,000). Binary seeds (``.eval``, ``.zip``,
Parquet) get a zip trick for ``type_swap``, ``huge_number`` and ``extra_fields``.

Every case runs ``parse_uploads`` (in memory, pyarrow readers) or ``parse_paths`` (files
in a temporary folder, DuckDB readers) and, if it parses, ``Store.ingest`` into a scratch
store. A case is *refused* when ``IngestError``/``StoreError`` is raised, *accepted* otherwise;
any other exception is *uncaught* (the CLI would exit 1). Before each store write the store
file's sha256 is taken; a refusal that changed it is a *partial write*. Targets: 0 uncaught,
0 partial writes. Peak memory is the largest ``ru_maxrss`` of the worker processes.

Usage::

    python bench/bench_fuzz.py                      # 10,000 cases, seed 0, 2 workers
    python bench/bench_fuzz.py --cases 500 --seed 3 --workers 1
    python bench/bench_fuzz.py --show 20            # also print 20 example refusals
    python bench/bench_fuzz.py --workers 3 --store-every 2   # faster on a busy machine

``run_cases(n, seed)`` is the entry point used by ``tests/ingest/test_fuzz.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import resource
import shutil
import struct
import sys
import tempfile
import time
import traceback
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FIXTURES = Path(os.environ.get("EVALBARS_FIXTURES", ROOT.parent / "shared" / "fixtures"))
if not FIXTURES.is_dir():
    FIXTURES = Path("/work/shared/fixtures")
SEED_LIMIT = 3 << 20        # seeds larger than this are cut to their first lines/records
BOMB_MB = (8, 64, 512)      # uncompressed sizes of the zip bombs (ratio ~1000x)
MUTATIONS = ("truncate", "flip", "type_swap", "deep_nest", "huge_line", "zip", "names",
             "huge_number", "extra_fields")
ZSTD0_MB = (64, 1024)       # what a zstd member declaring 0 bytes unpacks to (~32,000x)
MANY_MEMBERS = 20_000       # members of the "many_members" zip (the limit is 10,000)
# integers that fit no float, no int64 or no 32-bit answer index, and Python's digit limit
HUGE_NUMBERS = ("9" * 400, "1" * 5001, str(2 ** 63 - 1), str(-2 ** 63), "99999999999999999999",
                str(2 ** 31))

Files = list[tuple[str, bytes]]


# ---------------------------------------------------------------------------------------
# seeds
# ---------------------------------------------------------------------------------------
def _shrink(name: str, data: bytes) -> bytes:
    """Large JSONL seeds keep their first lines (the mutations do not need more)."""
    if len(data) <= SEED_LIMIT or not name.endswith(".jsonl"):
        return data
    return b"".join(data.splitlines(keepends=True)[:200])


def load_seeds() -> list[Files]:
    """Seed groups: each a list of (upload name, bytes) that parses as it is."""
    groups: list[Files] = []
    roots = [FIXTURES, ROOT / "tests" / "fixtures" / "wild", ROOT / "data" / "demo"]
    for root in roots:
        if not root.is_dir():
            continue
        # tidy tables of the wild corpus need a column map: they are not seeds that parse
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in
                       (".json", ".jsonl", ".eval", ".csv", ".parquet", ".zip")
                       and "tidy" not in p.relative_to(root).parts)
        by_dir: dict[Path, list[Path]] = {}
        for p in files:
            by_dir.setdefault(p.parent, []).append(p)
        for folder, ps in by_dir.items():
            names = {p.name for p in ps}
            if "per_instance_stats.json" in names:          # a HELM run folder: one group
                groups.append([(f"{folder.name}/{p.name}", p.read_bytes()) for p in ps])
                continue
            results = [p for p in ps if p.name.startswith("results_")]
            samples = [p for p in ps if p.name.startswith("samples_")]
            for p in ps:
                if p.stat().st_size > 64 << 20:
                    continue
                groups.append([(p.name, _shrink(p.name, p.read_bytes()))])
            for r in results:                            # results + one sample log of its run
                ts = r.name[len("results_"):-len(".json")]
                mine = [s for s in samples if ts in s.name]
                if mine:
                    s = mine[0]
                    groups.append([(f"{folder.name}/{r.name}", r.read_bytes()),
                                   (f"{folder.name}/{s.name}", _shrink(s.name, s.read_bytes()))])
    demo = sorted((ROOT / "data" / "demo" / "lm_eval").rglob("samples_boolq*.jsonl"))
    if demo:
        rows = [json.loads(line) for line in demo[0].read_text().splitlines()[:80]]
        csv = "model,task,item_id,score,cluster\n" + "".join(
            f"demo,boolq,{r['doc_id']},{r['acc']},{r['doc_id'] % 7}\n" for r in rows)
        groups.append([("tidy.csv", csv.encode())])
        jsonl = "".join(json.dumps({"model": "demo", "task": "boolq", "item_id": r["doc_id"],
                                    "score": r["acc"]}) + "\n" for r in rows)
        groups.append([("tidy.jsonl", jsonl.encode())])
    return groups


# ---------------------------------------------------------------------------------------
# mutations
# ---------------------------------------------------------------------------------------
SWAP_VALUES: list[Any] = ["abc", [1, 2], {"x": 1}, None, True, False, float("nan"),
                          float("inf"), float("-inf"), 1e308, -1e308, "1e309", 10 ** 30, -0.0,
                          "\x1b[31mRED\x1b[0m\x07<script>alert(1)</script>", "", 0, 2]


def _dumps(obj: Any) -> bytes:
    text = json.dumps(obj, allow_nan=True)
    return text.replace('"1e309"', "1e309").encode()


def _paths(obj: Any, prefix: tuple = (), out: list | None = None, limit: int = 4000) -> list:
    """Paths (key tuples) of values in a JSON object, breadth-limited."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(prefix + (k,))
            _paths(v, prefix + (k,), out, limit)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:50]):
            out.append(prefix + (i,))
            _paths(v, prefix + (i,), out, limit)
    return out


def _set(obj: Any, path: tuple, value: Any) -> None:
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def _get(obj: Any, path: tuple) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _mutate_json_value(data: bytes, rng: random.Random, how: str) -> bytes:
    """type_swap / deep_nest on a JSON document or on one line of a JSONL file."""
    text = data
    lines = None
    try:
        obj = json.loads(text)
    except ValueError:
        lines = data.splitlines(keepends=True)
        if not lines:
            return data
        i = rng.randrange(len(lines))
        try:
            obj = json.loads(lines[i])
        except ValueError:
            return data
    paths = _paths(obj)
    if not paths:
        return data
    path = rng.choice(paths)
    if how == "type_swap":
        value = rng.choice(SWAP_VALUES)
        _set(obj, path, value)
        new = _dumps(obj)
    else:
        depth = rng.choice([100, 600, 5000, 100_000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        marker = "__DEEP__"
        _set(obj, path, marker)
        new = _dumps(obj).replace(b'"__DEEP__"', (opener * depth + json.dumps(
            _get_or(obj, path)) + closer * depth).encode(), 1)
    if lines is None:
        return new
    lines[i] = new + b"\n"
    return b"".join(lines)


def _get_or(obj: Any, path: tuple) -> Any:
    v = _get(obj, path)
    return 1 if v == "__DEEP__" else v


def _huge_line(data: bytes, rng: random.Random) -> bytes:
    size = rng.choice([1, 2, 4]) << 20
    lines = data.splitlines(keepends=True) or [b""]
    i = rng.randrange(len(lines))
    if data.lstrip()[:1] == b"{" and b"\n" not in data.strip():
        try:   # a one-line JSON document: a huge string value inside it
            obj = json.loads(data)
            paths = [p for p in _paths(obj) if isinstance(_get(obj, p), str)]
            if paths:
                _set(obj, rng.choice(paths), "x" * size)
                return _dumps(obj)
        except ValueError:
            pass
    filler = rng.choice([b"x" * size, (b'{"doc_id": 1, "pad": "' + b"y" * size + b'"}'),
                         b"1," * (size // 2) + b"1"])
    lines.insert(i, filler + b"\n")
    return b"".join(lines)


def _zip(members: Files, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    import warnings

    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", compression) as z:
        warnings.simplefilter("ignore")      # the "duplicate" trick repeats a name on purpose
        for name, data in members:
            # a fixed timestamp: the same case gives the same bytes on every run
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data,
                       compress_type=compression)
    return buf.getvalue()


_BOMBS: dict[int, bytes] = {}
_BOMB_CRC: dict[int, int] = {}


def _bomb(name: str, mb: int) -> bytes:
    """A zip of one member ``name`` holding ``mb`` MB of spaces (ratio ~1000x); the
    raw deflate stream is made once per size; the archive around it is written here."""
    import zlib
    if mb not in _BOMBS:      # cached in memory and on disk (512 MB take ~25 s to deflate)
        cache = Path(tempfile.gettempdir()) / f"evalbars-fuzz-bomb-{mb}.deflate"
        chunk = b" " * (1 << 20)
        if cache.exists():
            raw = cache.read_bytes()
        else:
            comp = zlib.compressobj(9, zlib.DEFLATED, -15)
            raw = b"".join([comp.compress(chunk) for _ in range(mb)] + [comp.flush()])
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(raw)
            os.replace(tmp, cache)
        crc = 0
        for _ in range(mb):
            crc = zlib.crc32(chunk, crc)
        _BOMBS[mb] = raw
        _BOMB_CRC[mb] = crc
    raw = _BOMBS[mb]
    crc = _BOMB_CRC[mb]
    size = mb << 20
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.file_size, info.compress_size, info.CRC = size, len(raw), crc
    buf = io.BytesIO()
    zip64 = size >= 0xFFFFFFFF
    header = info.FileHeader(zip64)
    buf.write(header)
    buf.write(raw)
    cd_offset = buf.tell()
    extra = b""
    fsize, csize = size, len(raw)
    if zip64:
        import struct
        extra = struct.pack("<HHQQ", 1, 16, size, len(raw))
        fsize = csize = 0xFFFFFFFF
    import struct
    name_b = name.encode()
    cd = struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 45, 3, 45, 0, 0, 8, 0, 0, crc, csize,
                     fsize, len(name_b), len(extra), 0, 0, 0, 0, 0) + name_b + extra
    buf.write(cd)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(cd), cd_offset, 0)
    buf.write(end)
    return buf.getvalue()


def zstd_zip(members: Files, declared: dict[str, int] | None = None) -> bytes:
    """A zip whose members are zstandard-compressed (method 93, as inspect_ai writes .eval
    logs). ``declared``: a member's uncompressed size as the archive states it (0: the case
    of a writer that records none), whatever its compressed stream holds; the CRC-32 is the
    real one."""
    import zstandard

    declared = declared or {}
    out = io.BytesIO()
    central = []
    for name, data in members:
        comp = zstandard.ZstdCompressor(level=3).compress(data)
        crc = zlib.crc32(data)
        size = declared.get(name, len(data))
        name_b = name.encode()
        offset = out.tell()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, 93, 0, 0x21, crc, len(comp),
                              size, len(name_b), 0) + name_b + comp)
        central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 63, 63, 0, 93, 0, 0x21,
                                   crc, len(comp), size, len(name_b), 0, 0, 0, 0, 0, offset)
                       + name_b)
    start = out.tell()
    out.write(b"".join(central))
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central),
                          out.tell() - start, start, 0))
    return out.getvalue()


def zstd_size0_eval(mb: int) -> bytes:
    """An inspect-like ``.eval`` whose ``header.json`` declares 0 bytes and unpacks to
    ``mb`` MB (compressed chunk by chunk, so the whole is never held here)."""
    import zstandard

    chunk = b" " * (1 << 20)
    cobj = zstandard.ZstdCompressor(level=3).compressobj()
    comp = b"".join([cobj.compress(chunk) for _ in range(mb)] + [cobj.flush()])
    crc = 0
    for _ in range(mb):
        crc = zlib.crc32(chunk, crc)
    name = b"header.json"
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, 93, 0, 0x21, crc, len(comp), 0,
                        len(name), 0) + name + comp
    cd = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 63, 63, 0, 93, 0, 0x21, crc, len(comp),
                     0, len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(cd), len(local), 0)
    return local + cd + end


def many_members_zip(n: int, data: bytes = b"model,task,item_id,score\nm,t,1,1\n",
                     suffix: str = ".csv", declared_count: int | None = None) -> bytes:
    """A zip of ``n`` small stored members ``m00000.csv``, ... (work that grows with the
    members); ``declared_count``: the member count its end record claims instead of ``n``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for i in range(n):
            z.writestr(f"m{i:05d}{suffix}", data)
    out = bytearray(buf.getvalue())
    if declared_count is not None:
        end = out.rindex(b"PK\x05\x06")
        out[end + 8:end + 12] = struct.pack("<HH", declared_count, declared_count)
    return bytes(out)


def _zip_trick(files: Files, rng: random.Random) -> Files:
    trick = rng.choice(["plain", "bomb", "traversal", "absolute", "nested", "crc", "cut",
                        "method", "junk", "dir_only", "duplicate", "zstd_size0", "many_members"])
    members = list(files)
    if trick == "zstd_size0":
        return [("bomb.eval", _zstd0(rng.choice(ZSTD0_MB)))]
    if trick == "many_members":
        if MANY_MEMBERS not in _ZSTD0:
            _ZSTD0[MANY_MEMBERS] = many_members_zip(MANY_MEMBERS)
        return [("many.zip", _ZSTD0[MANY_MEMBERS])]
    if trick == "bomb":
        name = members[0][0].split("/")[-1]
        return [("bomb.zip", _bomb(name, rng.choice(BOMB_MB)))]
    if trick == "traversal":
        members.append(("../../etc/passwd.json", b"{}"))
    elif trick == "absolute":
        members.append(("/etc/passwd.json", b"{}"))
    elif trick == "nested":
        members.append(("inner.zip", _zip(files)))
    elif trick == "dir_only":
        return [("empty.zip", _zip([("folder/", b"")]))]
    elif trick == "duplicate":
        members.append(members[0])
    data = bytearray(_zip(members, rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])))
    if trick == "crc" and len(data) > 64:
        i = rng.randrange(30, max(31, len(data) // 2))
        data[i] ^= 0x55
    elif trick == "cut":
        data = data[: rng.randrange(1, len(data))]
    elif trick == "method":
        i = data.find(b"PK\x01\x02")      # central directory entry: method at offset 10
        if i >= 0:
            data[i + 10:i + 12] = (99).to_bytes(2, "little")
    elif trick == "junk":
        data += rng.randbytes(rng.randrange(1, 4096))
    return [("archive.zip", bytes(data))]


def _names(files: Files, rng: random.Random) -> Files:
    evil = rng.choice(["a\x1b[31mRED\x1b[0m\x07b", "c\u009bd\u202eevil", "<b>x</b><script>1</script>",
                       "name\r\nwith\tcontrols\x00", "'; DROP TABLE runs; --"])
    out = []
    for name, data in files:
        data = (data.replace(b'"pretrained=', b'"pretrained=' + evil.encode("utf-8"))
                .replace(b'"model": "', b'"model": "' + json.dumps(evil)[1:-1].encode())
                .replace(b"demo,boolq", evil.replace(",", " ").replace("\n", " ").encode() + b",boolq"))
        out.append((name, data))
    return out


_ZSTD0: dict[int, bytes] = {}     # made once per process: by size in MB, and the many-member zip


def _zstd0(mb: int) -> bytes:
    if mb not in _ZSTD0:
        _ZSTD0[mb] = zstd_size0_eval(mb)
    return _ZSTD0[mb]


def _huge_number(name: str, data: bytes, rng: random.Random) -> bytes:
    """One number of a JSON value, a JSONL line or a CSV cell replaced by a huge integer
    literal (``HUGE_NUMBERS``)."""
    huge = rng.choice(HUGE_NUMBERS)
    if name.lower().endswith((".csv", ".tsv")):
        lines = data.splitlines(keepends=True)
        if len(lines) < 2:
            return data
        i = rng.randrange(1, len(lines))
        sep = b"\t" if name.lower().endswith(".tsv") else b","
        cells = lines[i].rstrip(b"\r\n").split(sep)
        cells[rng.randrange(len(cells))] = huge.encode()
        lines[i] = sep.join(cells) + b"\n"
        return b"".join(lines)
    marker = "__HUGE_NUMBER__"
    try:
        obj = json.loads(data)
        lines = None
    except ValueError:
        lines = data.splitlines(keepends=True)
        if not lines:
            return data
        k = rng.randrange(len(lines))
        try:
            obj = json.loads(lines[k])
        except ValueError:
            return data
    paths = [p for p in _paths(obj) if isinstance(_get(obj, p), (int, float))
             and not isinstance(_get(obj, p), bool)] or _paths(obj)
    if not paths:
        return data
    _set(obj, rng.choice(paths), marker)
    new = _dumps(obj).replace(f'"{marker}"'.encode(), huge.encode(), 1)
    if lines is None:
        return new
    lines[k] = new + b"\n"
    return b"".join(lines)


def _extra_fields(name: str, data: bytes, rng: random.Random) -> bytes:
    """A CSV data row with 1-3 fields more, or 1-2 fewer, than the header."""
    lines = data.splitlines(keepends=True)
    if len(lines) < 2:
        return data
    i = rng.randrange(1, len(lines))
    row = lines[i].rstrip(b"\r\n")
    if rng.random() < 0.5:
        row += b"".join(b"," + str(rng.randrange(10)).encode() for _ in range(rng.randint(1, 3)))
    else:
        row = b",".join(row.split(b",")[:-rng.randint(1, 2)])
    lines[i] = row + b"\n"
    return b"".join(lines)


def mutate(group: Files, rng: random.Random, how: str) -> Files:
    files = list(group)
    if how == "zip":
        return _zip_trick(files, rng)
    if how == "names":
        return _names(files, rng)
    k = rng.randrange(len(files))
    name, data = files[k]
    if how == "truncate":
        data = data[: rng.randrange(0, max(1, len(data)))]
    elif how == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        data = bytes(b)
    elif how in ("type_swap", "deep_nest"):
        if name.endswith((".eval", ".zip", ".parquet")):
            return _zip_trick(files, rng) if how == "type_swap" else files
        data = _mutate_json_value(data, rng, how)
    elif how == "huge_line":
        data = _huge_line(data, rng)
    elif how in ("huge_number", "extra_fields"):
        if name.endswith((".eval", ".zip", ".parquet")):
            return _zip_trick(files, rng)
        csv_seed = name.lower().endswith((".csv", ".tsv"))
        data = (_extra_fields(name, data, rng) if how == "extra_fields" and csv_seed
                else _huge_number(name, data, rng))
    files[k] = (name, data)
    return files


# ---------------------------------------------------------------------------------------
# running cases
# ---------------------------------------------------------------------------------------
@dataclass
class Result:
    cases: int = 0
    accepted: int = 0
    refused: int = 0
    store_writes: int = 0
    uncaught: list[str] = field(default_factory=list)
    partial_writes: list[str] = field(default_factory=list)
    by_mutation: Counter = field(default_factory=Counter)
    refusals: list[str] = field(default_factory=list)
    slowest: list[tuple[float, str]] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    seconds: float = 0.0

    def merge(self, other: "Result") -> None:
        self.cases += other.cases
        self.accepted += other.accepted
        self.refused += other.refused
        self.store_writes += other.store_writes
        self.uncaught += other.uncaught
        self.partial_writes += other.partial_writes
        self.by_mutation.update(other.by_mutation)
        self.refusals += other.refusals[:50]
        self.slowest = sorted(self.slowest + other.slowest, reverse=True)[:10]
        self.peak_rss_mb = max(self.peak_rss_mb, other.peak_rss_mb)


def _sha(path: Path) -> str | None:
    """Digest of the store's catalog file (a committed write changes it; a refused one
    must not)."""
    catalog = path / "catalog.sqlite"
    if not catalog.exists():
        return None
    from evalcore.store import Store
    Store(path).close()     # checkpoint the catalog's write-ahead log into the file
    return hashlib.sha256(catalog.read_bytes()).hexdigest()


def run_cases(n: int, seed: int, start: int = 0, keep_refusals: int = 50,
              workdir: Path | None = None, max_seed_bytes: int | None = None,
              store_every: int = 1) -> Result:
    """Cases ``start .. start+n-1`` of the stream for ``seed`` (case i uses its own RNG
    seeded from (seed, i), so a failing case can be re-run alone).

    ``max_seed_bytes``: only seed groups up to this size (the test suite's quick run);
    ``store_every``: send every k-th parsed case to the store (1 = all)."""
    from evalcore.store import Store

    seeds = load_seeds()
    if max_seed_bytes is not None:
        seeds = [g for g in seeds if sum(len(d) for _n, d in g) <= max_seed_bytes]
    res = Result()
    t0 = time.perf_counter()
    own = workdir is None
    work = Path(tempfile.mkdtemp(prefix="evalbars-fuzz-")) if own else workdir
    state = {"store": Store(work / "store"), "path": work / "store"}
    try:
        for i in range(start, start + n):
            t_case = time.perf_counter()
            label = _one_case(i, seed, seeds, work, state, res, keep_refusals, store_every)
            res.slowest = sorted(res.slowest + [(time.perf_counter() - t_case, label)],
                                 reverse=True)[:10]
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    res.seconds = time.perf_counter() - t0
    res.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def _one_case(i: int, seed: int, seeds: list[Files], work: Path, state: dict, res: Result,
              keep_refusals: int, store_every: int = 1) -> str:
    from evalcore.errors import IngestError, StoreError
    from evalcore.ingest import parse_paths, parse_uploads
    from evalcore.store import Store

    rng = random.Random(f"{seed}:{i}")
    group = rng.choice(seeds)
    how = MUTATIONS[i % len(MUTATIONS)]
    label = f"case {i} ({how}, seed file {group[0][0]})"
    res.cases += 1
    res.by_mutation[how] += 1
    try:
        files = mutate(group, rng, how)
    except (RecursionError, ValueError, TypeError, KeyError, IndexError):
        files = group          # the mutation itself failed: the seed as it is
    on_disk = rng.random() < 0.5
    case_dir = work / f"case{i}"
    try:
        if on_disk:
            case_dir.mkdir()
            for name, data in files:
                p = case_dir / name
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
            runs = parse_paths([case_dir])
        else:
            runs = parse_uploads(files)
    except IngestError as exc:
        res.refused += 1
        if len(res.refusals) < keep_refusals:
            res.refusals.append(f"{label}: {exc}")
        return label
    except Exception as exc:   # noqa: BLE001 - counting them is the point
        res.uncaught.append(f"{label}: parse: {type(exc).__name__}: {exc}\n"
                            + traceback.format_exc(limit=-4))
        return label
    finally:
        if on_disk:
            shutil.rmtree(case_dir, ignore_errors=True)
    state["parsed"] = state.get("parsed", 0) + 1
    if (state["parsed"] - 1) % store_every:
        res.accepted += 1
        return label
    path: Path = state["path"]
    if res.store_writes and res.store_writes % 25 == 0:    # keep the store small
        state["store"].close()
        shutil.rmtree(path, ignore_errors=True)
        state["store"] = Store(path)
    before = _sha(path)
    res.store_writes += 1
    try:
        state["store"].ingest(runs)
        res.accepted += 1
    except StoreError as exc:
        res.refused += 1
        if _sha(path) != before:
            res.partial_writes.append(f"{label}: {exc}")
        if len(res.refusals) < keep_refusals:
            res.refusals.append(f"{label}: store: {exc}")
    except Exception as exc:   # noqa: BLE001
        res.uncaught.append(f"{label}: store: {type(exc).__name__}: {exc}\n"
                            + traceback.format_exc(limit=-4))
        if _sha(path) != before:
            res.partial_writes.append(f"{label}: {type(exc).__name__}")
    return label


def _worker(args: tuple[int, int, int, int]) -> Result:
    n, seed, start, store_every = args
    return run_cases(n, seed, start, store_every=store_every)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--show", type=int, default=8, help="example refusals to print")
    ap.add_argument("--store-every", type=int, default=1, dest="store_every",
                    help="write every k-th parsed case to the store (default 1: all)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    total = Result()
    if args.workers <= 1:
        total = run_cases(args.cases, args.seed, store_every=args.store_every)
    else:
        import multiprocessing as mp

        chunk = 250
        jobs = [(min(chunk, args.cases - s), args.seed, s, args.store_every)
                for s in range(0, args.cases, chunk)]
        ctx = mp.get_context("spawn")
        with ctx.Pool(args.workers, maxtasksperchild=4) as pool:
            for r in pool.imap_unordered(_worker, jobs):
                total.merge(r)
                print(f"  {total.cases:>6} cases, {len(total.uncaught)} uncaught, "
                      f"{len(total.partial_writes)} partial writes", flush=True)
        total.peak_rss_mb = max(total.peak_rss_mb, resource.getrusage(
            resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    wall = time.perf_counter() - t0
    print(f"\nfuzz: seed {args.seed}, {args.workers} workers, store write for every "
          f"{args.store_every} parsed case(s), {len(load_seeds())} seed groups, mutations "
          f"{', '.join(f'{m} {total.by_mutation[m]}' for m in MUTATIONS)}")
    print(f"cases:            {total.cases}")
    print(f"accepted:         {total.accepted}  (parsed and stored)")
    print(f"refused:          {total.refused}  (IngestError/StoreError with a message)")
    print(f"store writes:     {total.store_writes}")
    print(f"uncaught:         {len(total.uncaught)}  (target 0)")
    print(f"partial writes:   {len(total.partial_writes)}  (store changed by a refused case; target 0)")
    print(f"peak memory:      {total.peak_rss_mb:.0f} MB (largest worker ru_maxrss)")
    print(f"wall time:        {wall:.0f} s")
    for t, label in total.slowest[:5]:
        print(f"  slow: {t:.1f} s {label}")
    for r in total.refusals[: args.show]:
        print(f"  refused: {r[:200]}")
    for u in total.uncaught[:20]:
        print(f"UNCAUGHT {u}")
    for p in total.partial_writes[:20]:
        print(f"PARTIAL WRITE {p}")
    return 1 if total.uncaught or total.partial_writes else 0


if __name__ == "__main__":
    sys.exit(main())
