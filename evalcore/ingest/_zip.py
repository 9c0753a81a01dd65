"""Safe reading of zip archives (inspect ``.eval`` logs, zipped HELM run directories, zips
of result files), including zstandard members.

inspect_ai >= 0.3.2xx writes ``.eval`` members with compression method 93 (zstandard),
which Python's ``zipfile`` before 3.14 cannot decompress. ``ZipArchive.read`` reads such a
member's raw bytes after its local header and decompresses them with the ``zstandard``
package, then checks the CRC-32 like ``zipfile`` does for deflate members.

Refused with an ``IngestError`` naming the archive and member: a corrupt or non-zip file,
absolute or ``..`` member names (path traversal), nested archives, members whose
uncompressed size exceeds the size limit, unknown compression methods, CRC mismatches.
"""

from __future__ import annotations

import posixpath
import struct
import zipfile
import zlib
from typing import BinaryIO

from evalcore.errors import IngestError
from evalcore.ingest._common import Source, check_size, max_file_bytes

ZSTD_METHOD = 93
NESTED_ARCHIVE_SUFFIXES = (".zip", ".eval", ".tar", ".tgz", ".gz", ".7z", ".rar", ".xz", ".bz2")
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")


class ZipArchive:
    """A validated zip archive; ``names`` excludes directory entries."""

    def __init__(self, src: Source):
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
        total = sum(i.file_size for i in self._zf.infolist())
        if total > max_file_bytes():
            self.close()
            check_size(src.name, total, "zip members (uncompressed total)")

    def info(self, name: str) -> zipfile.ZipInfo:
        return self._zf.getinfo(name)

    def read(self, name: str) -> bytes:
        """The uncompressed bytes of one member (deflate, stored or zstandard)."""
        info = self._zf.getinfo(name)
        where = f"zip member {name!r}"
        if info.file_size > max_file_bytes():
            check_size(self.src.name, info.file_size, where)
        if info.compress_type == ZSTD_METHOD:
            return self._read_zstd(info, where)
        try:
            return self._zf.read(info)
        except NotImplementedError:
            raise IngestError(self.src.name, where, "deflate, stored or zstandard compression",
                              f"compression method {info.compress_type}") from None
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
            raise IngestError(self.src.name, where, "an intact zip member", str(exc)) from None

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


def member_folder(name: str) -> str:
    return posixpath.dirname(name.replace("\\", "/"))
