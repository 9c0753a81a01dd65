"""Scratch folders of the dashboard process (n-gram indexes of uploaded or bundled corpora).

Every folder made here is removed when the page replaces it (``discard``) and, at the latest,
when the process ends (``atexit``): a dashboard that runs for weeks, and every test process,
would otherwise leave a copy of each uploaded corpus and its index in the system's temporary
folder. A folder still in use by a session that closed its tab stays until the process ends.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

_LOCK = threading.Lock()
_FOLDERS: set[Path] = set()


def new_folder(prefix: str) -> Path:
    """A new empty folder in the system's temporary folder, removed at process exit."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    with _LOCK:
        _FOLDERS.add(folder)
    return folder


def discard(folder: str | Path | None) -> None:
    """Remove a folder made by ``new_folder`` now (nothing for ``None`` or another path)."""
    if folder is None:
        return
    folder = Path(folder)
    with _LOCK:
        if folder not in _FOLDERS:
            return
        _FOLDERS.discard(folder)
    shutil.rmtree(folder, ignore_errors=True)


def live_folders() -> list[Path]:
    """The folders made and not yet removed (for tests)."""
    with _LOCK:
        return sorted(_FOLDERS)


@atexit.register
def _remove_all() -> None:
    with _LOCK:
        folders = list(_FOLDERS)
        _FOLDERS.clear()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
