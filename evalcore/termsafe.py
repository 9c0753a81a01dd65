"""Terminal-safe text: control characters in user data never reach a terminal raw.

A run name, task or metric comes from the files a user ingests; printed raw, ESC/BEL or a
C1 control (``\\x9b`` is a one-byte CSI) would let a file recolour, retitle or rewrite the
terminal (``a\\x1b[31mRED\\x1b[0m\\x07b``). Every line the CLI writes goes through
``escape``; ``--format json`` output through ``escape_json``.

Escaped: C0 controls except newline (ESC, BEL, CR, TAB, backspace, ...), DEL, C1 controls
(U+0080-U+009F) and the Unicode bidirectional overrides/isolates (U+202A-U+202E,
U+2066-U+2069, which reorder what is shown), as ``\\xNN`` / ``\\uNNNN`` text. Newline is kept:
it is the structure of the output (values with newlines are flattened by the table renderers).
"""

from __future__ import annotations

import re
from typing import TextIO

_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hex(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape(text: str) -> str:
    """``text`` with every control character but newline written as ``\\xNN``/``\\uNNNN``."""
    return _UNSAFE.sub(_hex, text)


def escape_json(text: str) -> str:
    """JSON text with the characters ``json.dumps(ensure_ascii=False)`` leaves raw (DEL, C1,
    bidi controls; they only occur inside strings) as ``\\uNNNN`` escapes: still valid JSON
    that decodes to the same values."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class SafeStream:
    """A text stream wrapper whose ``write`` escapes (``escape``); ``write_raw`` passes text
    through unchanged (for output the program composes itself, such as a progress bar's
    carriage return)."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(escape(text))

    def write_raw(self, text: str) -> int:
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    def __getattr__(self, name: str):
        return getattr(self.stream, name)
