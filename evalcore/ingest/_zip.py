"""Safe reading of zip archives (inspect ``.eval`` logs, zipped HELM run directories, zips
of result files), including zstandard members.

inspect_ai >= 0.3.2xx writes ``.eval`` members with compression method 93 (zstandard),
which Python's ``zipfile`` before 3.14 cannot decompress. ``ZipArchive.read`` reads such a
member's raw bytes after its local header and decompresses them with the ``zstandard``
package, then checks the CRC-32 like ``zipfile`` does for deflate members.

Refused with an ``IngestError`` naming the archive and member, before anything is
decompressed: a corrupt or non-zip file, absolute or ``..`` member names (path traversal),
nested archives, members whose uncompressed size exceeds the per-file limit, members of more
than 1 MB that unpack to more than ``max_zip_ratio()`` times their compressed size (zip
bombs), archives whose members together exceed what is left of the per-ingest budget
(``UnzipBudget``, ``max_unzipped_bytes()``). Later: unknown compression methods and CRC
mismatches. A member is streamed (``ZipArchive.open``, ``open_member``): zipfile never
yields more than the size the central directory declares, so the checked sizes bound what
is decompressed.
"""

from __future__ import annotations

import io
import posixpath
import struct
import zipfile
import zlib
from typing import BinaryIO

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    MAX_RATIO_ENV,
    MAX_UNZIP_ENV,
    RATIO_MIN_BYTES,
    Source,
    check_size,
    max_file_bytes,
    max_unzipped_bytes,
    max_zip_ratio,
)

ZSTD_METHOD = 93
NESTED_ARCHIVE_SUFFIXES = (".zip", ".eval", ".tar", ".tgz", ".gz", ".7z", ".rar", ".xz", ".bz2")
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")


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


class ZipArchive:
    """A validated zip archive; ``names`` excludes directory entries.

    ``budget``: charged with every member's declared uncompressed size (refused early, with
    the member that crosses the limit named)."""

    def __init__(self, src: Source, budget: UnzipBudget | None = None):
        self.src = src
        self._fh: BinaryIO = src.open()
        try:
            self._zf = zipfile.ZipFile(self._fh)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            self._fh.close()
            raise IngestError(src.name, "zip central directory", "a readable zip archive",
                              str(exc)) from None
        self.names: list[str] = []
        for info in self._zf.infolist():
            name = info.filename
            norm = name.replace("\\", "/")
            parts = norm.split("/")
            if norm.startswith("/") or ".." in parts or (len(norm) > 1 and norm[1] == ":"):
                self.close()
                raise IngestError(src.name, f"zip member {name!r}",
                                  "relative member names inside the archive",
                                  "absolute or '..' paths (path traversal) are refused")
            if info.is_dir():
                continue
            if norm.lower().endswith(NESTED_ARCHIVE_SUFFIXES):
                self.close()
                raise IngestError(src.name, f"zip member {name!r}", "no nested archives",
                                  "unpack the inner archive and upload its files")
            self.names.append(name)
        ratio = max_zip_ratio()
        try:
            for info in self._zf.infolist():
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
            self.total = sum(i.file_size for i in self._zf.infolist())
        except IngestError:
            self.close()
            raise

    def info(self, name: str) -> zipfile.ZipInfo:
        return self._zf.getinfo(name)

    def read(self, name: str) -> bytes:
        """The uncompressed bytes of one member (deflate, stored or zstandard)."""
        info = self._zf.getinfo(name)
        where = f"zip member {name!r}"
        self._check_unencrypted(info, where)
        if info.file_size > max_file_bytes():
            check_size(self.src.name, info.file_size, where)
        if info.compress_type == ZSTD_METHOD:
            return self._read_zstd(info, where)
        try:
            return self._zf.read(info)
        except NotImplementedError:
            raise IngestError(self.src.name, where, "deflate, stored or zstandard compression",
                              f"compression method {info.compress_type}") from None
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError,
                struct.error) as exc:
            raise IngestError(self.src.name, where, "an intact zip member", str(exc)) from None

    def open(self, name: str) -> BinaryIO:
        """A buffered stream of one member's uncompressed bytes; read errors (CRC mismatch,
        corrupt data) become ``IngestError`` naming the member. zstandard members are
        decompressed whole (bounded by the checked size)."""
        info = self._zf.getinfo(name)
        where = f"zip member {name!r}"
        self._check_unencrypted(info, where)
        if info.compress_type == ZSTD_METHOD:
            return io.BytesIO(self._read_zstd(info, where))
        try:
            raw = self._zf.open(info)
        except NotImplementedError:
            raise IngestError(self.src.name, where, "deflate, stored or zstandard compression",
                              f"compression method {info.compress_type}") from None
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError,
                struct.error) as exc:
            raise IngestError(self.src.name, where, "an intact zip member", str(exc)) from None
        return io.BufferedReader(_MemberStream(raw, self.src.name, where), 1 << 20)

    def _check_unencrypted(self, info: zipfile.ZipInfo, where: str) -> None:
        """Harness logs are never encrypted; zipfile would raise RuntimeError asking for a
        password (seen when a flipped byte sets the flag): name the member instead."""
        if info.flag_bits & 0x1:
            raise IngestError(self.src.name, where, "an unencrypted zip member",
                              "the member is marked as encrypted")

    def _read_zstd(self, info: zipfile.ZipInfo, where: str) -> bytes:
        try:
            import zstandard
        except ImportError:  # pragma: no cover - zstandard is a runtime requirement
            raise IngestError(self.src.name, where, "the zstandard package to read method 93",
                              "pip install zstandard") from None
        try:
            self._fh.seek(info.header_offset)
            header = self._fh.read(_LOCAL_HEADER.size)
            sig, *_rest, name_len, extra_len = _LOCAL_HEADER.unpack(header)
            if sig != 0x04034B50:
                raise ValueError("bad local header signature")
            self._fh.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
            raw = self._fh.read(info.compress_size)
            reader = zstandard.ZstdDecompressor().stream_reader(raw)
            data = reader.read(info.file_size + 1) if info.file_size else reader.read()
        except (zstandard.ZstdError, ValueError, struct.error, OSError) as exc:
            raise IngestError(self.src.name, where, "an intact zstandard-compressed member",
                              str(exc)) from None
        if len(data) != info.file_size or (zlib.crc32(data) & 0xFFFFFFFF) != info.CRC:
            raise IngestError(self.src.name, where, "an intact zstandard-compressed member",
                              "size or CRC-32 mismatch (corrupt archive)")
        return data

    def close(self) -> None:
        try:
            self._zf.close()
        finally:
            self._fh.close()

    def __enter__(self) -> "ZipArchive":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _MemberStream(io.RawIOBase):
    """A zip member as a raw stream whose read errors are ``IngestError``s."""

    def __init__(self, raw: BinaryIO, archive: str, where: str, owner: "ZipArchive | None" = None):
        self._raw = raw
        self._archive = archive
        self._where = where
        self._owner = owner

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        try:
            data = self._raw.read(len(b))
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as exc:
            raise IngestError(self._archive, self._where, "an intact zip member",
                              str(exc)) from None
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._raw.close()
            finally:
                if self._owner is not None:
                    self._owner.close()
        super().close()


def open_member(archive: Source, member: str) -> BinaryIO:
    """A stream of one member of ``archive`` that closes the archive when closed."""
    z = ZipArchive(archive)
    try:
        info = z.info(member)
        where = f"zip member {member!r}"
        if info.compress_type == ZSTD_METHOD:
            data = z._read_zstd(info, where)
            z.close()
            return io.BytesIO(data)
        stream = z.open(member)
    except BaseException:
        z.close()
        raise
    stream.raw._owner = z  # type: ignore[attr-defined]
    return stream


def member_folder(name: str) -> str:
    return posixpath.dirname(name.replace("\\", "/"))
