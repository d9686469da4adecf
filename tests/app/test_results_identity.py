"""results.json stays byte-identical while the evaluator's code moves: this file holds the sha256 of three
results.json files, made against the scripted server (real HTTP) and from the recorded run folder.

- the built-in sample, default conditions (`carryon-eval --limit 2`);
- the built-in sample, `--conditions all --limit 2` (every condition whose inputs the dataset holds: without
  --opensafeintent, not the triplets, whose judges are OpenSafeIntent's release files);
- `carryon-eval report` on tests/fixtures/run_v0_1_0 (a run folder written by an earlier version);
and the sha256 of one compare.json: `carryon-eval compare --out` of two runs of the sample (`--conditions all --limit
2`, two target models whose replies differ, so that every number of the comparison has two runs behind it), its
mixed models outlined (FIT_KEYS).

The judge's answers vary with the text it reads (a digest of it), so that the numbers are not all 0 or 1. Only
what names the machine or the moment is replaced before hashing: the folder of the run, the dataset's path on
this machine and the time the report was written. A change of these hashes is a change of the product's
output: update them only when the output is meant to change, and say so in the commit."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.eval_cli import invoke, remote
from support.rollout_data import rollout_handler
from support.scripted_server import last_user_text

from carryon_eval.dataset.load import SAMPLE_DATASET
from support.shared_data import FIXTURES

FIXTURE = FIXTURES / "run_v0_1_0"

# since no shared file names a machine path: run.folder is "." (the folder results.json is in), all three;
# since the clarification effect: the new top-level clarification_effect, recovery.meaning and
# unscored.conversations_unplayed (all three); `all` also its intent section's exploitation as MC minus its BC twin
# (exploitation_rate and exploitation_bc_rate added; exploitation's value, bounds, interval and formula moved, and the
# violation sensitivity's formula names its sign)
# since the intervals are BCa at levels expanded for n queries: bootstrap.interval names the method (all three); the
# intervals themselves do not move on these 2-query runs (too few queries for an acceleration or an expansion)
# since many models are compared as a family: bc's harm_vs_nc and violation_rate_vs_nc (with their intervals, bounds
# and scored shares), clarification_effect.fidelity (no check ran: what a leaking simulator does), the run's own
# smallest detectable differences (the new top-level power; null on 2 queries, with the reason) (all three); `all`
# also its intent section without the violation-rate sensitivity (it is exploitation: intent.one_number says so);
# compare.json its pairs (each with its own interval and the adjusted verdict), pairs_method and failure_modes, and
# the notes on the pairs and the flags no model earned
HASHES = {
    "sample": "accbca5467adec53a4bfc92eff9f4713c798eb8ce686a1f06cc1f8cb7d7188a8",
    # since triplets have one definition (OpenSafeIntent's, its judges from --opensafeintent DIR): `all` without
    # the release folder has no triplet section
    "all": "9aa953e24debc864882724a2a66afe8b1b222d39398d4fad8538c32fdf6f215f",
    # since then too: the old folder's triplet section, as it was written, says which definitions it used
    "report": "8af802be873d2eb09fca4e5ab0e8bf6b13f0828b8f8a595a7f6bbda848bcb04b",
    "compare": "46a45614f294fd70d2e22888e5ec268c68b27107850eba5b2b8fb0207c5f6fc9",
}


#: Of the mixed models only what the evaluator decides is hashed (the formula, the data, the coefficients' names, why a
#: model was not fitted): statsmodels' REML fit on two runs' sixteen conversations differs from one process to the
#: next, in the last digits of every float and at times in whether the optimizer converged (and its warnings).
FIT_KEYS = ("formula", "groups", "n", "n_groups", "reason")


def digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def varied_handler(body: dict) -> Any:
    """The target and simulator of `rollout_handler`; a judge whose answers depend on a digest of the text it
    reads."""
    text = last_user_text(body)
    if body["model"] != "jdg":
        return rollout_handler(body)
    d = digest(text)
    if "checking whether a reply" in text:
        return "yes" if d % 3 else "no"
    if "rating how harmful" in text:
        return str(1 + d % 5)
    if "Classify that next message" in text:
        return ("pushback", "delaying", "rephrasing", "backchannel")[d % 4]
    if "hidden purpose" in text:
        return "no" if d % 4 else "yes"
    raise AssertionError(f"unexpected judge prompt: {text[:80]}")


def normalized(results: Path, *places: Path) -> bytes:
    """results.json's bytes with the run's folder, the dataset's path and the report's time replaced."""
    text = results.read_text()
    for i, place in enumerate(places):
        text = text.replace(json.dumps(str(place))[1:-1], f"<place{i}>")
    text = re.sub(r'"at": "[^"]*"', '"at": "<at>"', text)
    return text.encode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("name, extra", [("sample", ()), ("all", ("--conditions", "all"))])
def test_results_of_a_run_on_the_sample_are_unchanged(name, extra, scripted_server, tmp_path):
    srv = scripted_server(varied_handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    res = invoke(*remote(srv), "--limit", 2, *extra, "--out", out)
    assert res.exit_code == 0, res.output
    assert sha(normalized(out / "results.json", out, SAMPLE_DATASET)) == HASHES[name]


def test_results_of_the_recorded_run_folder_are_unchanged(tmp_path):
    run = tmp_path / "old"
    shutil.copytree(FIXTURE, run)
    res = invoke("report", run)
    assert res.exit_code == 0, res.output
    assert sha(normalized(run / "results.json", run, SAMPLE_DATASET)) == HASHES["report"]


def second_model(body: dict) -> Any:
    """`varied_handler`, with a second target model (tgt2) whose replies differ from tgt's."""
    if body["model"] == "tgt2":
        return rollout_handler(body) + " (the second model's reply)"
    return varied_handler(body)


def outlined_fits(data: Any) -> Any:
    """compare.json with each mixed model reduced to FIT_KEYS and its coefficients' names."""
    def outline(fit: dict) -> dict:
        return {**{k: fit[k] for k in FIT_KEYS}, "coefficients": list(fit["coefficients"] or [])}
    return {k: {name: outline(fit) for name, fit in v.items()} if k == "mixed_models" else v for k, v in data.items()}


def test_compare_of_two_runs_is_unchanged(scripted_server, tmp_path):
    srv = scripted_server(second_model, models=("tgt", "tgt2", "sim", "jdg"))
    for name, model in (("a", "tgt"), ("b", "tgt2")):
        args = remote(srv)
        args[args.index("tgt")] = model
        res = invoke(*args, "--limit", 2, "--conditions", "all", "--out", tmp_path / name)
        assert res.exit_code == 0, res.output
    res = invoke("compare", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "cmp")
    assert res.exit_code == 0, res.output
    cmp = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert cmp["models"] == ["tgt", "tgt2"] and cmp["mixed_models"]["utility"]["coefficients"]
    text = json.dumps(outlined_fits(cmp), indent=2, ensure_ascii=False) + "\n"
    assert sha(text.encode()) == HASHES["compare"]
