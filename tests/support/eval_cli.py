"""Driving `carryon-eval` in tests: `invoke` (in-process, click's runner), `one_error_line` (the one-line,
exit-2 failure every bad input must end in), `remote` (the three roles on one scripted server: tgt, sim,
jdg), and for a run in a subprocess (to signal it): `slowly` (a handler that answers late), `spawn` (start
`carryon-eval ARGS`) and `wait_for_lines` (until it has written N lines to a file, e.g. to interrupt it there); `table_calls` reads
the dry run's cost table."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from click.testing import CliRunner
from support.scripted_server import Fault

from carryon_eval.cli import cli


def invoke(*args: Any, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)


def one_error_line(result: Any) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("carryon-eval: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def remote(srv: Any, *extra: Any) -> list[Any]:
    return ["--endpoint", srv.base_url, "--model", "tgt", "--user-endpoint", srv.base_url, "--user-model", "sim",
            "--judge-endpoint", srv.base_url, "--judge-model", "jdg", *extra]


def wait_for_lines(proc: subprocess.Popen, path: Path, n: int, timeout: float = 60) -> None:
    """Return once `path` has `n` complete lines; fail if `proc` ends first (or nothing comes in time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if path.is_file() and path.read_text().count("\n") >= n:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()


def slowly(handler: Callable[[dict], Any], seconds: float = 0.15) -> Callable[[dict], Any]:
    return lambda body: Fault.delay(seconds, then=handler(body))


def spawn(*args: Any, text: bool = False) -> subprocess.Popen:
    """`carryon-eval ARGS` in a subprocess, offline and unbuffered, its output captured."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "carryon_eval.cli", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text)


def table_calls(stdout: str) -> dict[str, int]:
    """{role: calls} from the table's "ROLE all N ..." lines."""
    return {m.group(1): int(m.group(2).replace(",", ""))
            for m in re.finditer(r"^(target|user|judge)\s+all\s+([\d,]+)", stdout, re.M)}
