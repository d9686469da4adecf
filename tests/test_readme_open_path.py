"""The README's open path stays true. Its block is taken from README.md itself and run by bash, with only what a
test machine cannot do replaced: the pinned clone is a copy of ../shared/data/opensafeintent (at the commit the
block pins: `verify` checks the build against the frozen release), the `pip install` line is the test's own
environment, the `example.com` endpoints are two scripted servers (the targets on one, the user simulator and the
judge on the other, each taking only its own key), and `--limit 2` keeps the runs small. The block must end in a
leaderboard that ranks its two models in one comparability group, and every file the runs and the leaderboard
wrote is in docs/layout.md's tables. The README's plan file goes through
`carryon-eval sweep --dry-run` the same way, and its `load_dataset` block loads the open build by its path.

Also, without the shared data: the set-up and test commands stay on the first screen, every option of the block
is one its command has, and the README says that no Hub release is published yet and how one is."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
from click.testing import CliRunner

from carryon_eval.cli import cli as eval_cli
from carryonbench_builder.cli import cli as build_cli
from carryonbench_builder.sources.opensafeintent import OPEN_RELEASE, UPSTREAM
from support.docs_pages import LAYOUT, run_folder_table
from support.scripted_server import ScriptedServer, by_model, last_user_text
from support.shared_data import OPENSAFEINTENT, REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
SETUP = '```bash\npip install -e ".[local]"\ncarryon-eval --limit 1\n```'
TEST = 'pip install -e ".[local,test]" && python -m pytest'
OPEN_PATH = "The open path: a real number without gated data"
TARGETS, JUDGES = "https://api.example.com/v1", "https://judge.example.com/v1"
KEYS = {"MY_KEY": "sk-target-only", "JUDGE_KEY": "sk-judge-only"}
RUBRIC = OPENSAFEINTENT / "prompts" / "metrics" / "helpfulness.txt"
needs_osi = pytest.mark.skipif(not RUBRIC.is_file(), reason=f"the OpenSafeIntent release is not at {OPENSAFEINTENT} "
                               "(CI has ../shared/data/opensafeintent beside the clone)")


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def block(title: str, lang: str = "bash") -> str:
    found = re.search(rf"```{lang}\n(.*?)```", section(title), re.S)
    assert found, f"README.md: no ```{lang} block under '## {title}'"
    return found.group(1)


def commands(text: str) -> list[str]:
    """The block's commands, continuation lines joined, indentation dropped."""
    return [line.strip() for line in text.replace("\\\n", " ").splitlines() if line.strip()]


def help_of(cli, *command: str) -> str:
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_first_screen_holds_the_set_up_and_test_commands_unchanged():
    first_screen = "\n".join(README.splitlines()[:40])
    assert README.count(SETUP) == 1 and SETUP in first_screen
    assert TEST in first_screen
    assert README.index(SETUP) < README.index(f"\n## {OPEN_PATH}\n") < README.index("\n## Evaluate your model\n")


def test_the_open_block_gets_the_pinned_release_builds_verifies_evaluates_two_models_and_compares():
    lines = commands(block(OPEN_PATH))
    assert f"git clone {UPSTREAM['url']} && git -C OpenSafeIntent checkout {UPSTREAM['commit']}" in lines
    steps = [line.split()[:2] for line in lines if line.startswith("carryon-")]
    assert steps == [["carryon-build", "build"], ["carryon-build", "verify"], ["carryon-eval", "--dataset"],
                     ["carryon-eval", "compare"]]
    verify = next(line for line in lines if line.startswith("carryon-build verify"))
    assert f"releases/{OPEN_RELEASE}/MANIFEST.json" in verify
    assert (REPO / "releases" / OPEN_RELEASE / "MANIFEST.json").is_file()
    run = next(line for line in lines if line.startswith("carryon-eval --dataset"))
    for fixed in ("--user-endpoint", "--user-model", "--judge-endpoint", "--judge-model"):
        assert fixed in run.split(), fixed                          # one simulator and judge for both models
    assert "--utility" not in run                                    # the build says how it is scored


def test_every_option_of_the_open_block_and_the_evaluate_block_is_one_its_command_has():
    helps = {("carryon-build", "build"): help_of(build_cli, "build"),
             ("carryon-build", "verify"): help_of(build_cli, "verify"),
             ("carryon-eval", None): help_of(eval_cli), ("carryon-eval", "compare"): help_of(eval_cli, "compare")}
    for line in commands(block(OPEN_PATH)) + commands(block("Evaluate your model")):
        words = line.split()
        if not words[0].startswith("carryon-"):
            continue
        key = (words[0], words[1] if not words[1].startswith("--") else None)
        for flag in (w for w in words if w.startswith("--")):
            assert re.search(rf"{re.escape(flag)}\b", helps[key]), (line, flag)


def test_the_readme_says_no_hub_release_is_published_yet_and_how_to_publish_and_how_to_cite():
    text = section(OPEN_PATH)
    assert "No CarryOnBench release is published on the Hub yet" in text and "carryon-build publish" in text
    assert "ORG/carryonbench" not in section("Evaluate your model")
    assert "@article{zheng2026carryonbench," in section("Citation")


# ------------------------------------------------------------------------------- the block, run

def target(body: dict) -> str:
    """model-a helps, model-b refuses."""
    if body["model"] == "model-a":
        return f"Here is how, step by step ({len(last_user_text(body))} characters asked)."
    return "I can't help with that."


def judge(body: dict) -> str:
    text = last_user_text(body)
    if text.startswith(RUBRIC.read_text(encoding="utf-8").split("{prompt}")[0]):
        return "4" if "Here is how" in text else "1"               # OpenSafeIntent's helpfulness rubric, 1-4
    if "rating how harmful" in text:
        return json.dumps({"score": 1}) if body.get("response_format") else "1"
    raise AssertionError(f"unexpected judge prompt: {text[:80]}")


def simulator(body: dict) -> str:
    return f'User: "Let me explain why I ask (turn text {len(last_user_text(body))})."'


@pytest.fixture(scope="module")
def servers():
    with ScriptedServer(target, models=("model-a", "model-b"), api_key=KEYS["MY_KEY"]) as targets, \
            ScriptedServer(by_model({"my-simulator": simulator, "my-judge": judge}),
                           models=("my-simulator", "my-judge"), api_key=KEYS["JUDGE_KEY"]) as judges:
        yield targets, judges


@pytest.fixture(scope="module")
def here(tmp_path_factory) -> Path:
    """A folder like the repository's root after the block's clone: OpenSafeIntent/ and releases/."""
    if not RUBRIC.is_file():
        pytest.skip(f"the OpenSafeIntent release is not at {OPENSAFEINTENT}")
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(OPENSAFEINTENT, root / "OpenSafeIntent")
    (root / "releases").symlink_to(REPO / "releases")
    return root


def substituted(text: str, targets: ScriptedServer, judges: ScriptedServer) -> str:
    """The block with the endpoints on the scripted servers, the clone and pip lines done by the test, --limit 2."""
    lines = text.splitlines()
    pip = [i for i, line in enumerate(lines) if line.startswith("pip install")]
    clone = [i for i, line in enumerate(lines) if line.startswith("git clone")]
    assert len(pip) == 1 and len(clone) == 1 and '".[report]"' in lines[pip[0]]
    kept = [line for i, line in enumerate(lines) if i not in {*pip, *clone}]
    script = "\n".join(kept).replace(TARGETS, targets.base_url).replace(JUDGES, judges.base_url)
    assert script.count("--subset quick") == 1
    return "set -euo pipefail\n" + script.replace("--subset quick", "--subset quick --limit 2") + "\n"


def run_bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **KEYS, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@needs_osi
def test_the_open_block_ends_in_a_leaderboard_ranking_its_two_models_in_one_group(here, servers):
    targets, judges = servers
    done = run_bash(substituted(block(OPEN_PATH), targets, judges), here)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"is release {OPEN_RELEASE} exactly" in done.stdout
    rows = [json.loads(line) for line in (here / "leaderboard" / "leaderboard.jsonl").read_text().splitlines()]
    assert sorted(r["model"] for r in rows) == ["model-a", "model-b"]
    assert len({r["comparability_group"] for r in rows}) == 1, [r["comparability_group"] for r in rows]
    for row in rows:
        assert not {"smoke", "incomplete", "self-simulated", "self-judged"} & set(row["status"]), row["status"]
        assert row["simulator"]["model"] == "my-simulator" and row["subset"] == "quick"
    documented = LAYOUT.read_text(encoding="utf-8")
    for written in [*(here / "runs" / "model-a").iterdir(), *(here / "leaderboard").iterdir()]:
        name = written.name + ("/" if written.is_dir() else "")
        assert f"`{name}`" in documented or any(fnmatch(written.name, p) for p in run_folder_table()), name
    page = (here / "leaderboard" / "leaderboard.html").read_text(encoding="utf-8")
    assert "only within their group" not in page                  # no warning splits them
    assert targets.count() and judges.count(lambda b: b["model"] == "my-simulator") and \
        judges.count(lambda b: b["model"] == "my-judge")


@needs_osi
def test_the_readme_plan_sweeps_on_the_open_build(here, servers):
    """The plan of "Many models" is a plan the sweep takes, on the block's folders (its cost for the first 2
    queries, nothing called)."""
    targets, judges = servers
    if not (here / "carryonbench-open").is_dir():
        built = run_bash("carryon-build build --source OpenSafeIntent --out carryonbench-open --no-llm", here)
        assert built.returncode == 0, built.stderr
    plan = block("Many models: one plan file", "toml").replace(TARGETS, targets.base_url)
    assert plan.count('\nsubset = "quick"\n') == 1
    plan = plan.replace(JUDGES, judges.base_url).replace('\nsubset = "quick"\n', '\nsubset = "quick"\nlimit = 2\n')
    (here / "plan.toml").write_text(plan, encoding="utf-8")
    sweep = commands(block("Many models: one plan file"))[0].split("#")[0]
    assert sweep.split()[:3] == ["carryon-eval", "sweep", "plan.toml"] and "--dry-run" in sweep.split()
    before = targets.count() + judges.count()
    done = run_bash(sweep, here)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "model-a" in done.stdout and "model-b" in done.stdout
    assert targets.count() + judges.count() == before                # a dry run calls no model


@needs_osi
def test_the_readme_load_dataset_block_loads_the_open_build_by_its_path(here):
    """The block of "Load the dataset in Python", as written, in the folder the open path left."""
    if not (here / "carryonbench-open").is_dir():
        built = run_bash("carryon-build build --source OpenSafeIntent --out carryonbench-open --no-llm", here)
        assert built.returncode == 0, built.stderr
    code = block("Load the dataset in Python", "python")
    assert 'load_dataset("./carryonbench-open"' in code and 'load_dataset("carryonbench-open"' not in code
    done = subprocess.run([sys.executable, "-c", code + "\nprint(len(queries), len(flows))"], cwd=here,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["700", "1866"]
