"""inspect-ai stays optional: the evaluator never imports it unless asked, and without it `export --format
inspect` and `import` end in one line naming the extra (no traceback, nothing written)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _python(code: str, *, hide_inspect: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if hide_inspect is not None:        # a stand-in package that fails to import, as an absent one does
        (hide_inspect / "inspect_ai").mkdir(parents=True, exist_ok=True)
        (hide_inspect / "inspect_ai" / "__init__.py").write_text("raise ImportError('inspect_ai is absent')\n")
        env["PYTHONPATH"] = os.pathsep.join([str(hide_inspect), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_the_cli_does_not_import_inspect() -> None:
    out = _python("import sys, carryon_eval.cli, carryon_eval.app.exporters, carryon_eval.inspect_bridge; "
                  "print('inspect_ai' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_export_and_import_without_inspect_are_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for args in (["export", str(run), "--format", "inspect", "--out", str(tmp_path / "x.eval")],
                 ["import", str(tmp_path / "x.eval"), "--out", str(tmp_path / "new")]):
        out = _python(f"from carryon_eval.cli import main; main({args!r})", hide_inspect=tmp_path / "shadow")
        assert out.returncode == 2, (out.stdout, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert lines == ['carryon-eval: error: inspect-ai is not installed; pip install "carryonbench[inspect]"']
    assert not (tmp_path / "x.eval").exists() and not (tmp_path / "new").exists()


def test_loading_every_wing_imports_no_inspect_and_the_inspect_parts_resolve() -> None:
    """A suite's inspect part (SuiteReport.inspect) is imported only by inspect_bridge: loading the wings (their
    scorers and stages) leaves inspect-ai out; asked for, each hook is a function of its module."""
    out = _python("import sys\nfrom carryon_eval.suite import load_wings, suites\nload_wings()\n"
                  "print('inspect_ai' in sys.modules)\n"
                  "parts = [s.report.inspect for s in suites() if s.report is not None and s.report.inspect]\n"
                  "hooks = [h for p in parts for h in (p.task, p.samples, p.metrics, p.metadata) if h is not None]\n"
                  "print(len(hooks), all(callable(h.resolve()) for h in hooks))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "4", "True"]
