"""Safe reading of zip archives (inspect ``.eval`` logs, zipped HELM run directories, zips
of result files), including zstandard members.

inspect_ai >= 0.3.2xx writes ``.eval`` members with compression method 93 (zstandard),
which Python's ``zipfile`` before 3.14 cannot decompress: such a member's raw bytes after
its local header are decompressed with the ``zstandard`` package, as a stream, and its
CRC-32 is checked like ``zipfile`` does for deflate members.

Refused with an ``IngestError`` naming the archive (and the member), before anything is
decompressed: a corrupt or non-zip file; more members than ``max_zip_members()`` (counted
from the central directory's records before any of them is parsed; an inspect log may hold
``EVAL_MEMBER_FACTOR`` times as many, one member per sample and epoch); absolute or ``..``
member names (path traversal); nested archives; members whose declared uncompressed size
exceeds the per-file limit; members of more than 1 MB that declare more than
``max_zip_ratio()`` times their compressed size (zip bombs); archives whose members together
exceed what is left of the per-ingest budget (``UnzipBudget``, ``max_unzipped_bytes()``).

While a member is read: every member, deflate, stored or zstandard, is decompressed as a
stream with a running count of the bytes it gave, and refused as soon as it gives one byte
more than its declared uncompressed size (a member declaring 0 bytes gives at most 1 before
it is refused), so the checked sizes bound the work whatever the archive's compressed
stream holds. Unknown compression methods, encrypted members and CRC mismatches are refused
naming the member.

The central directory is read once per archive (``ZipArchive``); the members found there are
opened from that listing (``ZipIndex``), each on its own file handle, so reading every
member of an archive is linear in the members.
"""

from __future__ import annotations

import io
import posixpath
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    MAX_MEMBERS_ENV,
    MAX_RATIO_ENV,
    MAX_UNZIP_ENV,
    RATIO_MIN_BYTES,
    Source,
    check_size,
    max_file_bytes,
    max_unzipped_bytes,
    max_zip_members,
    max_zip_ratio,
)

ZSTD_METHOD = 93
NESTED_ARCHIVE_SUFFIXES = (".zip", ".eval", ".tar", ".tgz", ".gz", ".7z", ".rar", ".xz", ".bz2")
# an inspect .eval log holds one member per sample and epoch (MMLU: 14,042 samples), so it
# may hold this many times the member limit of a zip of result files
EVAL_MEMBER_FACTOR = 20
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, struct.error)


class UnzipBudget:
    """The uncompressed bytes one ingest may still unpack (``max_unzipped_bytes()``)."""

    def __init__(self, limit: int | None = None):
        self.limit = max_unzipped_bytes() if limit is None else limit
        self.used = 0

    def charge(self, archive: str, member: str, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise IngestError(
                archive, f"zip member {member!r}",
                f"at most {self.limit / 1048576:g} MB of uncompressed zip members in one ingest "
                f"(set {MAX_UNZIP_ENV} to raise the limit)",
                f"with this member, {self.used / 1048576:.1f} MB; nothing was unpacked")


@dataclass
class ZipIndex:
    """The checked member list of one archive: opens a member without reading the central
    directory again (a fresh handle on the archive per member, so several members may be
    open at once)."""

    src: Source
    infos: dict[str, zipfile.ZipInfo]

    def open(self, name: str) -> BinaryIO:
        """A buffered stream of the member's uncompressed bytes, bounded by its declared
        size; read errors become ``IngestError`` naming the member."""
        info = self.infos[name]
        where = f"zip member {name!r}"
        if info.flag_bits & 0x1:
            # harness logs are never encrypted; zipfile would ask for a password (seen when
            # a flipped byte sets the flag)
            raise IngestError(self.src.name, where, "an unencrypted zip member",
                              "the member is marked as encrypted")
        fh = self.src.open()
        try:
            _seek_member_data(fh, info)
            if info.compress_type == ZSTD_METHOD:
                raw: BinaryIO = _ZstdReader(fh, info, self.src.name, where)
            else:
                raw = zipfile.ZipExtFile(fh, "r", info, None, True)
        except NotImplementedError:
            fh.close()
            raise IngestError(self.src.name, where, "deflate, stored or zstandard compression",
                              f"compression method {info.compress_type}") from None
        except IngestError:
            fh.close()
            raise
        except _READ_ERRORS as exc:
            fh.close()
            raise IngestError(self.src.name, where, "an intact zip member", str(exc)) from None
        except BaseException:
            fh.close()
            raise
        return io.BufferedReader(_BoundedMember(raw, info.file_size, self.src.name, where),
                                 1 << 20)

    def read(self, name: str) -> bytes:
        """The member's uncompressed bytes (at most its declared size)."""
        with self.open(name) as fh:
            return fh.read()


def _seek_member_data(fh: BinaryIO, info: zipfile.ZipInfo) -> None:
    """Position ``fh`` at the member's compressed bytes, after its local header (whose name
    must be the central directory's, as ``zipfile`` checks)."""
    fh.seek(info.header_offset)
    header = fh.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size:
        raise zipfile.BadZipFile("truncated local file header")
    sig, _ver, flags, *_rest, name_len, extra_len = _LOCAL_HEADER.unpack(header)
    if sig != 0x04034B50:
        raise zipfile.BadZipFile("bad local header signature")
    name = fh.read(name_len)
    text = name.decode("utf-8" if flags & 0x800 else "cp437", "replace")
    if text != info.orig_filename:
        raise zipfile.BadZipFile(f"file name in directory {info.orig_filename!r} and header "
                                 f"{text!r} differ")
    fh.seek(extra_len, io.SEEK_CUR)


class ZipArchive:
    """A validated zip archive; ``names`` excludes directory entries.

    ``budget``: charged with every member's declared uncompressed size (refused early, with
    the member that crosses the limit named). ``max_members``: the member limit (default
    ``max_zip_members()``; an inspect log is allowed ``EVAL_MEMBER_FACTOR`` times it). The
    listing is kept as ``index`` and on ``src`` (``Source.zip_index``), so members opened
    later (``open_member``) do not read the central directory again."""

    def __init__(self, src: Source, budget: UnzipBudget | None = None,
                 max_members: int | None = None):
        self.src = src
        limit = max_zip_members() if max_members is None else max_members
        infos = _list_members(src, limit)
        self.names: list[str] = [i.filename for i in infos if not i.is_dir()]
        if len(self.names) > limit and not _is_eval(self.names):
            raise _too_many(src.name, len(self.names), limit)
        for info in infos:
            _check_member(src, info)
        ratio = max_zip_ratio()
        for info in infos:
            if info.is_dir():
                continue
            where = f"zip member {info.filename!r}"
            if info.file_size > max_file_bytes():
                check_size(src.name, info.file_size, where)
            if info.file_size > RATIO_MIN_BYTES and \
                    info.file_size > ratio * max(info.compress_size, 1):
                raise IngestError(
                    src.name, where, f"a compression ratio of at most {ratio:g} "
                    f"(set {MAX_RATIO_ENV} to raise it)",
                    f"{info.compress_size} bytes unpack to {info.file_size / 1048576:.1f} MB, "
                    f"{info.file_size / max(info.compress_size, 1):.0f}x: a zip bomb? "
                    "nothing was unpacked")
            if budget is not None:
                budget.charge(src.name, info.filename, info.file_size)
        self.total = sum(i.file_size for i in infos)
        self.index = ZipIndex(src, {i.filename: i for i in infos if not i.is_dir()})
        src.zip_index = self.index

    def info(self, name: str) -> zipfile.ZipInfo:
        return self.index.infos[name]

    def read(self, name: str) -> bytes:
        """The uncompressed bytes of one member (deflate, stored or zstandard)."""
        if self.info(name).file_size > max_file_bytes():
            check_size(self.src.name, self.info(name).file_size, f"zip member {name!r}")
        return self.index.read(name)

    def open(self, name: str) -> BinaryIO:
        """A buffered stream of one member's uncompressed bytes (``ZipIndex.open``)."""
        return self.index.open(name)

    def close(self) -> None:
        """Nothing to release: the listing holds no open file (kept for ``with``)."""

    def __enter__(self) -> "ZipArchive":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_eval(names: list[str]) -> bool:
    return "header.json" in names or "_journal/start.json" in names


def _too_many(archive: str, count: int, limit: int) -> IngestError:
    return IngestError(archive, "zip central directory",
                       f"at most {limit:,} members (set {MAX_MEMBERS_ENV} to raise the limit; "
                       f"an inspect .eval log may hold {EVAL_MEMBER_FACTOR} times as many)",
                       f"the archive lists {count:,}; nothing was unpacked")


def _list_members(src: Source, limit: int) -> list[zipfile.ZipInfo]:
    """The central directory's entries, read once; more than ``limit`` records (an archive
    whose first member is an inspect log's: ``EVAL_MEMBER_FACTOR`` times as many) is refused
    before ``zipfile`` makes an object of any of them."""
    with src.open() as fh:
        try:
            hard_limit = limit * EVAL_MEMBER_FACTOR if _starts_like_eval(fh) else limit
            count = _central_records(fh)
            if count is not None and count > hard_limit:
                raise _too_many(src.name, count, limit)
            with zipfile.ZipFile(fh) as zf:
                return zf.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as exc:
            raise IngestError(src.name, "zip central directory", "a readable zip archive",
                              str(exc)) from None


def _starts_like_eval(fh: BinaryIO) -> bool:
    """Whether the first local header names an inspect log's member (as inspect_ai writes
    them: the journal or the header first)."""
    fh.seek(0)
    head = fh.read(_LOCAL_HEADER.size + 64)
    if len(head) < _LOCAL_HEADER.size or not head.startswith(b"PK\x03\x04"):
        return False
    name_len = _LOCAL_HEADER.unpack(head[:_LOCAL_HEADER.size])[-2]
    first = head[_LOCAL_HEADER.size:_LOCAL_HEADER.size + name_len]
    return first.startswith((b"_journal/", b"header.json", b"samples/", b"summaries.json",
                             b"reductions.json"))


def _central_records(fh: BinaryIO) -> int | None:
    """How many members the central directory holds: the larger of the count the end record
    declares and the count of central-directory signatures in the bytes it spans (a record
    that lies about the count is not believed). None when there is no end record (zipfile
    then says why)."""
    endrec = zipfile._EndRecData(fh)  # the stdlib's own end-record reader (zip64 aware)
    if not endrec:
        return None
    declared = int(endrec[zipfile._ECD_ENTRIES_TOTAL])
    size_cd, offset_cd = int(endrec[zipfile._ECD_SIZE]), int(endrec[zipfile._ECD_OFFSET])
    start = endrec[zipfile._ECD_LOCATION] - size_cd
    if endrec[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:
        start -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator
    if start < 0:
        start = offset_cd
    fh.seek(start)
    seen, tail, left = 0, b"", size_cd
    while left > 0:
        chunk = fh.read(min(left, 1 << 20))
        if not chunk:
            break
        left -= len(chunk)
        block = tail + chunk
        seen += block.count(_CENTRAL_SIGNATURE)
        tail = block[-3:]
        # a signature lying across two chunks is counted once: the 3 bytes kept cannot
        # hold a whole one
    return max(declared, seen)


def _check_member(src: Source, info: zipfile.ZipInfo) -> None:
    name = info.filename
    norm = name.replace("\\", "/")
    parts = norm.split("/")
    if norm.startswith("/") or ".." in parts or (len(norm) > 1 and norm[1] == ":"):
        raise IngestError(src.name, f"zip member {name!r}",
                          "relative member names inside the archive",
                          "absolute or '..' paths (path traversal) are refused")
    if not info.is_dir() and norm.lower().endswith(NESTED_ARCHIVE_SUFFIXES):
        raise IngestError(src.name, f"zip member {name!r}", "no nested archives",
                          "unpack the inner archive and upload its files")


class _ZstdReader(io.RawIOBase):
    """A zstandard member decompressed as it is read (one frame, as inspect_ai writes it);
    at its end the size and CRC-32 are checked against the central directory."""

    def __init__(self, fh: BinaryIO, info: zipfile.ZipInfo, archive: str, where: str):
        try:
            import zstandard
        except ImportError:  # pragma: no cover - zstandard is a runtime requirement
            raise IngestError(archive, where, "the zstandard package to read method 93",
                              "pip install zstandard") from None
        self._fh = fh
        self._info = info
        self._archive = archive
        self._where = where
        self._errors = (zstandard.ZstdError, *_READ_ERRORS)
        self._reader = zstandard.ZstdDecompressor().stream_reader(
            _Slice(fh, info.compress_size), read_size=1 << 16)
        self._crc = 0
        self._size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        try:
            data = self._reader.read(len(b))
        except self._errors as exc:
            raise IngestError(self._archive, self._where,
                              "an intact zstandard-compressed member", str(exc)) from None
        if not data:
            if self._size != self._info.file_size or self._crc != self._info.CRC:
                raise IngestError(self._archive, self._where,
                                  "an intact zstandard-compressed member",
                                  "size or CRC-32 mismatch (corrupt archive)")
            return 0
        self._size += len(data)
        self._crc = zlib.crc32(data, self._crc)
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._reader.close()
            finally:
                self._fh.close()
        super().close()


class _Slice(io.RawIOBase):
    """The next ``length`` bytes of ``fh`` (a member's compressed stream)."""

    def __init__(self, fh: BinaryIO, length: int):
        self._fh = fh
        self._left = length

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._fh.read(n) if n else b""
        self._left -= len(data)
        return data

    def readinto(self, b) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)


class _BoundedMember(io.RawIOBase):
    """A member's uncompressed stream with a running count: one byte past the declared size
    is refused (whatever the compressed stream holds), read errors become ``IngestError``s."""

    def __init__(self, raw: BinaryIO, declared: int, archive: str, where: str):
        self._raw = raw
        self._left = declared
        self._declared = declared
        self._archive = archive
        self._where = where

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        want = min(len(b), self._left + 1)
        try:
            data = self._raw.read(want)
        except IngestError:
            raise
        except (*_READ_ERRORS, RuntimeError) as exc:
            raise IngestError(self._archive, self._where, "an intact zip member",
                              str(exc)) from None
        if len(data) > self._left:
            raise IngestError(self._archive, self._where,
                              f"at most the {self._declared:,} bytes the archive declares for "
                              "this member", "it unpacks to more: a zip bomb or a corrupt "
                              "archive; stopped there")
        self._left -= len(data)
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def open_member(archive: Source, member: str) -> BinaryIO:
    """A stream of one member of ``archive``, from the archive's listing when it was read
    already (``Source.zip_index``), else after listing it once."""
    index = archive.zip_index
    if index is None:
        index = ZipArchive(archive).index
    if member not in index.infos:
        raise IngestError(archive.name, f"zip member {member!r}", "a member of the archive",
                          "not in its central directory")
    return index.open(member)


def member_folder(name: str) -> str:
    return posixpath.dirname(name.replace("\\", "/"))
