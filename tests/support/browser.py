"""Open a local HTML file in headless Chromium and collect what it logged to the console.

    from support.browser import chromium, render_headless
    needs_chromium = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (CI installs it)")
    dom, console = render_headless(page, profile_dir=tmp_path / "chrome-profile")
    assert not console, console
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

__all__ = ["chromium", "render_headless"]

_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0"]


def chromium() -> Optional[str]:
    """Path of a Chromium/Chrome executable, or None."""
    for name in _CANDIDATES:
        path = shutil.which(name) if not os.path.isabs(name) else (name if os.path.exists(name) else None)
        if path:
            return path
    return None


def render_headless(page: Path, *, profile_dir: Path, timeout: float = 120) -> tuple[str, list[str]]:
    """Load ``page`` in headless Chromium (a fresh profile in ``profile_dir``); return the rendered DOM and
    the console messages and uncaught errors it logged. Fails the test if Chromium itself fails."""
    exe = chromium()
    assert exe is not None, "chromium is not installed"
    proc = subprocess.run([exe, *_FLAGS, f"--user-data-dir={profile_dir}", "--dump-dom", Path(page).resolve().as_uri()],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    return proc.stdout, console
