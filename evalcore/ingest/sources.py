"""Gathering what an ingest reads: the files given and the files inside the folders given
(symlinks followed only inside the folder), zip members (listed once, checked against the
unzip limits before anything is unpacked) and in-memory uploads, each as a ``Source``."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Iterable

from evalcore.errors import IngestError
from evalcore.ingest._common import Source
from evalcore.ingest._zip import UnzipBudget, ZipArchive, member_folder
from evalcore.ingest.detect import KNOWN_SUFFIXES


def path_sources(paths: Iterable[str | Path]) -> tuple[list[Source], list[str]]:
    """Sources of the files given and of the files inside the folders given (recursively).

    Inside a folder, symlinks are followed only when they resolve to a place inside that
    folder; others (``/etc/passwd``, ``../secret``, broken or looping links) are skipped and
    named in a warning, so nothing outside what the user named is read."""
    sources: list[Source] = []
    skipped: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            root = path.resolve()
            for f in sorted(_walk(path, root, skipped)):
                if any(part.startswith(".") for part in f.relative_to(path).parts):
                    continue
                if f.suffix.lower() not in KNOWN_SUFFIXES:
                    skipped.append(str(f))
                    continue
                sources.append(Source(name=str(f), path=f, folder=str(f.parent)))
        elif path.is_file():
            sources.append(Source(name=str(p), path=path, folder=str(path.parent)))
        else:
            raise IngestError(str(p), None, "an existing file or folder", "not found")
    return sources, skipped


def _inside(target: Path, root: Path) -> bool:
    return target == root or root in target.parents


def _walk(folder: Path, root: Path, skipped: list[str]) -> list[Path]:
    """Regular files under ``folder`` (not following symlinks that leave ``root``)."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        d = Path(dirpath)
        for name in list(dirnames):
            sub = d / name
            if sub.is_symlink():
                dirnames.remove(name)
                try:
                    target = sub.resolve(strict=True)
                except (OSError, RuntimeError):
                    target = None
                if target is None or not _inside(target, root):
                    skipped.append(f"{sub} (symlink to outside the folder, not followed)")
                # a link to a folder inside the root: its files are reached directly
        for name in filenames:
            f = d / name
            if f.is_symlink():
                try:
                    target = f.resolve(strict=True)
                except (OSError, RuntimeError):
                    skipped.append(f"{f} (broken symlink)")
                    continue
                if not _inside(target, root):
                    skipped.append(f"{f} (symlink to outside the folder, not followed)")
                    continue
            if f.is_file():
                out.append(f)
    return out


def expand_zip(src: Source, skipped: list[str], budget: UnzipBudget | None = None
                ) -> tuple[list[Source], str | None]:
    """A zip's members as sources (streamed from the archive when read); (members, kind)
    with kind 'inspect' | 'helm' | None. Sizes, ratios and the ingest's ``budget`` are
    checked before anything is unpacked."""
    with ZipArchive(src, budget) as z:
        names = z.names
        bases = {posixpath.basename(n) for n in names}
        if "header.json" in names or "_journal/start.json" in names:
            return [], "inspect"
        members: list[Source] = []
        for n in names:
            base = posixpath.basename(n)
            if not base or base.startswith(".") or "__MACOSX" in n:
                continue
            if posixpath.splitext(base)[1].lower() not in KNOWN_SUFFIXES:
                skipped.append(f"{src.name}!{n}")
                continue
            members.append(Source(name=f"{src.name}!{n}", archive=src, member=n,
                                  folder=f"{src.name}!{member_folder(n)}",
                                  _size=z.info(n).file_size))
        if not members:
            raise IngestError(src.name, "zip members", "at least one known file "
                              "(.json, .jsonl, .eval, .csv, .parquet)",
                              f"members: {', '.join(names[:6]) or 'none'}")
        kind = "helm" if "per_instance_stats.json" in bases else None
        return members, kind


def upload_sources(files: list[tuple[str, bytes]]) -> list[Source]:
    sources = []
    for name, data in files:
        norm = name.replace("\\", "/")
        sources.append(Source(name=name, data=bytes(data), folder=posixpath.dirname(norm)))
    return sources
