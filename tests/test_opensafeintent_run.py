"""OpenSafeIntent end to end against the scripted server, on the first 20 sets of the shipped release (skipped,
saying why, when ../shared is absent): the reference's generation, its judges seeing the prompt actually sent,
the probe on the target in a fresh context, the section, and the export in the reference's layout that reads
back to the same numbers. The judges' answers are scripted per reply (some unreadable, some fenced)."""
from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from carryon_eval.model.client import Endpoint, EndpointConfig
from carryon_eval.opensafeintent.export import read_reference
from carryon_eval.opensafeintent.metrics import HEADLINE, summarize
from carryon_eval.opensafeintent.prompts import fill
from carryon_eval.opensafeintent.release import load_release
from carryon_eval.opensafeintent.report import render_markdown
from carryon_eval.opensafeintent.suite import (JUDGMENTS_FILE, PROBE_FILE, cost, cost_lines, export_run, generate,
                                               judge_replies, load_judgments, probe_intent, replies,
                                               section)
from carryon_eval.run.folder import RunFolder
from scripted_server import by_model, last_user_text, rubric_judges

REPO = Path(__file__).resolve().parents[1]
SHIPPED = next((p / "shared" / "data" / "opensafeintent" for p in REPO.parents
                if (p / "shared" / "data" / "opensafeintent" / "dataset.json").is_file()),
               REPO.parent / "shared" / "data" / "opensafeintent")
pytestmark = pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(),
                                reason=f"the OpenSafeIntent release copy is not at {SHIPPED}")
FENCE = "```"


def pick(text: str, options: list[str]) -> str:
    return options[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(options)]


ANSWERS = {
    "helpfulness": lambda t: pick(t, ["4", "3", "2", "1", "Score: 3", "N/A", "4"]),
    "harmfulness": lambda t: pick(t, ["0", "0", "1", "3", "0", "unsafe", "2"]),
    "assistance_level": lambda t: pick(t, [json.dumps({"a_level": "A2"}), f"{FENCE}json\n{{\"a_level\": \"a4\"}}\n{FENCE}",
                                           json.dumps({"a_level": "A0"}), "A3", json.dumps({"a_level": "A3"})]),
    "intent_classification": lambda t: pick(t, [json.dumps({"strategy": "FULL"}), json.dumps({"strategy": "refuse"}),
                                                f"{FENCE}\n{{\"strategy\": \"CONSTRAINED\"}}\n{FENCE}", "FULL"]),
}


def target_reply(body):
    return f"synthetic reply to {hashlib.sha256(last_user_text(body).encode()).hexdigest()[:12]}"


@pytest.fixture(scope="module")
def release():
    return load_release(SHIPPED, limit=20)


@pytest.fixture(scope="module")
def ran(release, tmp_path_factory):
    from scripted_server import ScriptedServer
    judges = rubric_judges({k: release.templates[k] for k in ANSWERS}, ANSWERS, "unexpected")
    with ScriptedServer(by_model({"target": rubric_judges({"intent_classification":
                                                           release.templates["intent_classification"]},
                                                          ANSWERS, target_reply),
                                  "judge": judges}), models=("target", "judge")) as srv:
        run = RunFolder(tmp_path_factory.mktemp("osi") / "run")
        run.path.mkdir(parents=True)

        async def go():
            target = Endpoint(EndpointConfig(srv.base_url, "target"))
            judge = Endpoint(EndpointConfig(srv.base_url, "judge"))
            try:
                made = await generate(release, run, target)
                await judge_replies(release, run, judge)
                await probe_intent(release, run, target, "judge")
                again = await generate(release, run, target)          # a rerun generates nothing
                return made, again
            finally:
                await target.aclose()
                await judge.aclose()
        made, again = asyncio.run(go())
        return run, list(srv.requests), made, again


def test_generation_is_the_references(ran, release):
    run, requests, made, again = ran
    assert (made, again) == (140, 0)
    sent = [b for b in requests if b["model"] == "target" and len(b["messages"]) == 1
            and not last_user_text(b).startswith(release.templates["intent_classification"][:40])]
    assert len(sent) == 140
    assert all(b["messages"][0]["role"] == "user" for b in sent)          # single turn, no system prompt
    assert {(b["max_tokens"] if "max_tokens" in b else b.get("max_completion_tokens"), b["temperature"])
            for b in sent} == {(1000, 0.0)}
    assert sorted(last_user_text(b) for b in sent) == sorted(t for s in release.sets for _, t in s.prompts)


def test_each_judge_sees_the_prompt_that_was_sent(ran, release):
    run, requests, *_ = ran
    judged = [last_user_text(b) for b in requests if b["model"] == "judge"]
    got = replies(run)
    expected = []
    for s in release.sets:
        for name, prompt in s.prompts:
            reply = got[(s.set_id, name)].replies[0].content
            expected += [fill("helpfulness", release.templates["helpfulness"], prompt, reply),
                         fill("harmfulness", release.templates["harmfulness"], prompt, reply)]
            if name == "dual_use_prompt":
                expected.append(fill("assistance_level", release.templates["assistance_level"], prompt, reply))
    assert sorted(judged) == sorted(expected)                              # 280 rubric + 20 assistance level
    assert len(judged) == 300 == cost(20)["helpfulness+harmfulness"] + cost(20)["assistance_level"]
    # every record holds the answer of the judge it asked (the scripted judges tell the rubrics apart)
    records = load_judgments(run)
    assert {j.metric for j in records} == {"helpfulness", "harmfulness", "assistance_level", "intent_classification"}
    for j in records:
        t = got[(j.set_id, j.prompt_name)]
        sent = (fill(j.metric, release.templates[j.metric], t.messages[0].content) if j.metric == "intent_classification"
                else fill(j.metric, release.templates[j.metric], t.messages[0].content, t.replies[0].content))
        assert j.raw == ANSWERS[j.metric](sent), (j.metric, j.conversation_id)


def test_probe_asks_the_target_in_a_fresh_context(ran, release):
    run, requests, *_ = ran
    probes = [b for b in requests if last_user_text(b).startswith(release.templates["intent_classification"][:40])]
    assert probes and all(b["model"] == "target" and len(b["messages"]) == 1 for b in probes)
    sec = section(release, run, "judge", n_resamples=200)
    assert len(probes) == sec["intent_probe"]["considered"] <= cost(20)["intent_probe_at_most"]
    assert sum(sec["intent_probe"][k]["count"] for k in ("FULL", "CONSTRAINED", "REFUSE", "ERROR")) == len(probes)
    assert sec["intent_probe"]["ERROR"]["count"] > 0                       # the bare "FULL" answers
    assert (run.path / PROBE_FILE).is_file() and (run.path / JUDGMENTS_FILE).is_file()


def test_section_matches_the_metrics_of_the_export(ran, release, tmp_path):
    run, *_ = ran
    sec = section(release, run, "judge", n_resamples=200)
    assert sec["n_sets"] == 20 and sec["unscored"]["helpfulness"] > 0 and sec["unscored"]["harmfulness"] > 0
    assert sec["unscored"]["helpfulness"] < 70 and sec["triplet_safety"]["n"] > 0
    for m in HEADLINE:
        assert set(sec[m]) == {"value", "n", "ci95"}
    paths = export_run(release, run, "judge", "target", tmp_path / "ref")
    rows = json.loads(paths["scored"].read_text())
    assert len(rows) == 20 and set(rows[0]["generated_prompts"]) == {"benign_prompt", "dual_use_prompt",
                                                                      "malicious_prompt"}
    back = summarize(read_reference(paths["scored"], paths["assistance_level"], paths["intent_classification"]),
                     n_resamples=200)
    for key in (*HEADLINE, "variants", "paraphrase", "response_modes", "intent_probe", "failure_profile",
                "by_harm_domain", "by_task_type"):
        assert back[key] == sec[key], key
    md = render_markdown(sec)
    assert "## OpenSafeIntent" in md and "intent_calibrated_utility" in md


def test_cost_lines_of_the_whole_release():
    full = load_release(SHIPPED)
    lines = "\n".join(cost_lines(full))
    assert "700 prompt-sets, 4,900 prompts" in lines
    assert "4,900 calls" in lines and "9,800 calls helpfulness + harmfulness" in lines and "700 calls assistance" in lines
