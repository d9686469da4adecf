"""A run imports the wings it evaluates: `carryon-eval` runs end to end in a child process against the scripted
server (real HTTP), and the child writes the names of every module it imported when it exits.

- a CarryOnBench run (`--conditions all` without a release folder) imports no module of the OpenSafeIntent and
  triplet wings, not even their packages: their records are declarations as data (each wing's ``suite.toml``, read
  by carryon_eval.suite.declared), which give the command line their options and conditions;
- an OpenSafeIntent run imports its wing (its hooks, scorers, metrics, report), and its results.json has no
  empty ``judges.utility`` / ``judges.safety``: those are the CarryOnBench section's judges, written with it.
  (Its release folder is the triplet suite's input too: given, the triplet wing reads and checks it, as before.)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.eval_cli import remote
from support.rollout_data import evaluator_handler
from support.shared_data import OPENSAFEINTENT as SHIPPED

from carryon_eval.run.results import JudgesInfo, Results
from carryon_eval.suite import suites
from carryon_eval.suite.lazy import Hook, hooks_in

OSI, TRIPLET = "carryon_eval.suites.opensafeintent", "carryon_eval.suites.triplet"

#: the child: `carryon-eval ARGS` (the CLI's main), its imported modules written to the first argument at exit
CHILD = ("import atexit, json, sys\n"
         "atexit.register(lambda: open(sys.argv[1], 'w').write(json.dumps(sorted(sys.modules))))\n"
         "from carryon_eval.cli import main\n"
         "main(sys.argv[2:])\n")


def run_and_list_modules(tmp_path: Path, *args: Any) -> tuple[subprocess.CompletedProcess, list[str]]:
    listed = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(listed), *map(str, args)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert listed.is_file(), proc.stderr[-2000:]
    return proc, json.loads(listed.read_text())


def wing_modules(modules: list[str]) -> set[str]:
    return {m for m in modules if m in (OSI, TRIPLET) or m.startswith((OSI + ".", TRIPLET + "."))}


def test_every_hook_a_record_names_is_a_function_of_its_module():
    named = [(s.name, h) for s in suites() for h in hooks_in(s)]
    assert {name for name, _ in named} >= {"opensafeintent", "triplet"}
    for name, hook in named:
        assert callable(hook.resolve()), (name, hook)
    with pytest.raises(AttributeError, match="suite hook carryon_eval.suite.lazy:nowhere is not a function"):
        Hook("carryon_eval.suite.lazy", "nowhere")()


def test_a_carryonbench_run_imports_no_module_of_the_other_wings(scripted_server, tmp_path):
    """`--conditions all` without a release folder: every condition CarryOnBench has (the suites with inputs of
    their own are asked only whether theirs were given)."""
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    proc, modules = run_and_list_modules(tmp_path, *remote(srv), "--limit", 2, "--conditions", "all", "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["conditions"] and results["judges"]["utility"]["models"] == ["jdg"]     # it ran, end to end
    assert any(m.startswith("carryon_eval.suites.carryonbench.") for m in modules)
    assert wing_modules(modules) == set(), sorted(wing_modules(modules))


def test_the_other_wings_options_are_offered_without_importing_them(tmp_path):
    """`carryon-eval --help` lists OpenSafeIntent's options (read from its suite.toml) and imports neither wing."""
    (tmp_path / "help").mkdir()
    proc, modules = run_and_list_modules(tmp_path / "help", "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--opensafeintent DIR" in proc.stdout and "--opensafeintent-sets" in proc.stdout
    assert "triplet" in proc.stdout and "opensafeintent" in proc.stdout.split("--conditions", 1)[1]
    assert wing_modules(modules) == set(), sorted(wing_modules(modules))


@pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(),
                    reason=f"the OpenSafeIntent release copy is not at {SHIPPED}")
def test_an_opensafeintent_run_imports_its_wing_and_writes_no_carryonbench_judges(scripted_server, tmp_path):
    from support.opensafeintent_scripted import handler

    from carryon_eval.suites.opensafeintent.release import load_release

    srv = scripted_server(handler(load_release(SHIPPED, limit=2)), models=("tgt", "jdg"))
    out = tmp_path / "run"
    proc, modules = run_and_list_modules(
        tmp_path, "--conditions", "opensafeintent", "--opensafeintent", SHIPPED, "--limit", 2, "--endpoint",
        srv.base_url, "--model", "tgt", "--judge-endpoint", srv.base_url, "--judge-model", "jdg", "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {f"{OSI}.hooks", f"{OSI}.scorers", f"{OSI}.metrics", f"{OSI}.report"} <= wing_modules(modules)
    results = json.loads((out / "results.json").read_text())     # (tests/report/test_frame.py reads the rest)
    assert results["opensafeintent"]["n_sets"] == 2
    assert results["judges"] == {"complete": True, "selected": "jdg", "present": ["jdg"]}


def test_the_judges_of_the_top_level_section_are_written_with_it_only():
    """results.json's serializer: ``judges.utility`` / ``judges.safety`` belong to the CarryOnBench section."""
    alone = Results(model="m", judges=JudgesInfo(complete=True, selected="j", present=["j"]))
    from carryon_eval.suites.opensafeintent.section import OpenSafeIntentSection

    alone.put_section("opensafeintent", OpenSafeIntentSection(n_sets=2))
    assert alone.to_json()["judges"] == {"complete": True, "selected": "j", "present": ["j"]}
    assert Results.from_json(alone.to_json()).to_json() == alone.to_json()
    from carryon_eval.suites.carryonbench.section import CarryOnBenchSection

    both = Results(model="m")
    both.put_section("carryonbench", CarryOnBenchSection.from_json(
        {"conditions": {}, "judges": {"utility": {"models": ["j"]}, "safety": {}}}))
    assert list(both.to_json()["judges"])[:2] == ["utility", "safety"]
    assert both.to_json()["judges"]["utility"] == {"models": ["j"]}
