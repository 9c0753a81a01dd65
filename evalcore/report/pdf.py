"""Print a report's HTML to PDF with headless Chromium.

The PDF is the same HTML file printed by Chromium (``--print-to-pdf``): A4 landscape, a new
page for every section (the HTML's ``break-before: page``), no header or footer line. The
browser is ``$EVALBARS_CHROMIUM``, else ``$BROWSER_PATH`` (kaleido's variable), else
``chromium``/``chromium-browser``/``google-chrome`` on the PATH or ``/usr/bin/chromium``.
Networking is off (``--disable-background-networking``, and the report's
Content-Security-Policy forbids every request). Without a browser, ``PdfUnavailable`` says
so; the CLI turns it into exit code 3 and a message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from evalcore.errors import EvalbarsError

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT_S = 120


class PdfUnavailable(EvalbarsError):
    """No headless Chromium to print with, or printing failed."""


def find_chromium() -> str | None:
    """The Chromium executable to print with, or None."""
    for var in ("EVALBARS_CHROMIUM", "BROWSER_PATH"):
        path = os.environ.get(var)
        if path:
            return path if Path(path).exists() or shutil.which(path) else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def chromium_command(browser: str, html_path: Path, pdf_path: Path, profile: Path) -> list[str]:
    """The command line that prints ``html_path`` to ``pdf_path``."""
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-extensions", "--disable-sync",
            "--no-first-run", "--no-default-browser-check", "--mute-audio",
            "--hide-scrollbars", f"--user-data-dir={profile}",
            # let Plotly draw every figure before the page is printed
            "--run-all-compositor-stages-before-draw", "--virtual-time-budget=30000",
            "--no-pdf-header-footer", f"--print-to-pdf={pdf_path}", html_path.resolve().as_uri()]


def write_pdf(html_path: str | Path, pdf_path: str | Path, *, browser: str | None = None) -> Path:
    """Print the HTML file ``html_path`` to ``pdf_path`` with headless Chromium.

    Raises PdfUnavailable when no browser is found or it does not produce a PDF.
    """
    html_path, pdf_path = Path(html_path), Path(pdf_path)
    browser = browser or find_chromium()
    if not browser:
        raise PdfUnavailable("PDF needs headless Chromium, and none was found (install "
                             "Debian's 'chromium' package or set EVALBARS_CHROMIUM); the HTML "
                             f"report was written to {html_path}")
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    if pdf_path.exists():
        pdf_path.unlink()
    with tempfile.TemporaryDirectory(prefix="evalbars-chromium-") as profile:
        cmd = chromium_command(browser, html_path, pdf_path.resolve(), Path(profile))
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            raise PdfUnavailable(f"Chromium ({browser}) could not print the report: {exc}") from exc
    if not pdf_path.exists() or pdf_path.stat().st_size == 0 or \
            not pdf_path.read_bytes()[:5] == b"%PDF-":
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise PdfUnavailable(f"Chromium ({browser}) did not write a PDF (exit code "
                             f"{done.returncode}): {' | '.join(tail) or 'no message'}")
    return pdf_path
