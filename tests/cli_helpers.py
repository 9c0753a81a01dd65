"""Calling the CLI in-process from tests (shared by the CLI, coverage, hostile-input and report tests)."""

from __future__ import annotations

from evalcore import cli


def run_main(capsys, *argv) -> tuple[int | str | None, str, str]:
    """(exit code, stdout, stderr) of ``cli.main(argv)``, a SystemExit's code included."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err
