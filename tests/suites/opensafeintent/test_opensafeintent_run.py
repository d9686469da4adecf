"""OpenSafeIntent end to end against the scripted server, on the first 20 sets of the shipped release (skipped,
saying why, when ../shared is absent), through the shared seams: its suite record loads the release into the
Benchmark and plans the jobs, the shared rollout plays them (the reference's generation), the judge phase runs its
registered scorers (each judge seeing the prompt actually sent), its Probe asks the target in a fresh context, its
SuiteReport summarizes the section and exports the reference's layout, which reads back to the same numbers.
The judges' answers are scripted per reply (some unreadable, some fenced)."""
from __future__ import annotations

import asyncio
import json

import pytest

from carryon_eval.suite import ProbeContext
from carryon_eval.app.cost import Caps, estimate
from carryon_eval.dataset.load import load_benchmark
from carryon_eval.judge.phase import judge_run
from carryon_eval.judge.store import judgment_file, load_all
from carryon_eval.model.client import Endpoint, EndpointConfig
from carryon_eval.suites.opensafeintent.export import read_reference
from carryon_eval.suites.opensafeintent.metrics import HEADLINE, summarize
from carryon_eval.suites.opensafeintent.prompts import fill
from carryon_eval.suites.opensafeintent.release import load_release
from carryon_eval.report.blocks import to_markdown
from carryon_eval.suites.opensafeintent.report import section_blocks
from carryon_eval.suites.opensafeintent.suite import (PROBE_FILE, SCORERS, inputs_of, load_probes,
                                                     parse_conversation_id, replies)
from carryon_eval.report.phase import suite_inputs
from carryon_eval.rollout.play import rollout
from carryon_eval.rollout.simulator import UserSimulator
from carryon_eval.run.folder import RunFolder
from carryon_eval.run.records import Generation, JudgeSettings
from carryon_eval.suite import ScoringPlan, load_inputs, plan_jobs, suite_of
from support.scripted_server import by_model, last_user_text, rubric_judges

from support.judged_run import run_json
from support.opensafeintent_scripted import ANSWERS, target_reply
from support.shared_data import OPENSAFEINTENT as SHIPPED
pytestmark = pytest.mark.skipif(not (SHIPPED / "dataset.json").is_file(),
                                reason=f"the OpenSafeIntent release copy is not at {SHIPPED}")
def bench_with(limit=None):
    """The built-in sample with the release loaded by the suite record (its first ``limit`` sets)."""
    bench = load_benchmark(None)
    load_inputs(bench, {"opensafeintent": SHIPPED, "limit": limit})
    return bench


def cost(n_sets):
    """The calls the shared cost table predicts for the first ``n_sets`` sets (the probe's: up to)."""
    bench = bench_with(n_sets)
    jobs, _ = plan_jobs(bench, ["opensafeintent"])
    table = estimate(bench, jobs, Caps(target=1024, user=256, settings=JudgeSettings(max_tokens=1024)), scoring=ScoringPlan.of(["opensafeintent"]),
                     conditions=["opensafeintent"]).to_json()
    by = table["judge_by_scorer"]
    return {"target": table["roles"]["target"]["opensafeintent"]["calls"], "helpfulness": by["osi_helpfulness"],
            "harmfulness": by["osi_harmfulness"], "helpfulness+harmfulness": by["osi_helpfulness"] + by["osi_harmfulness"],
            "assistance_level": by["osi_assistance_level"], "intent_probe_at_most": table["up_to"]["target"]["intent_probe"]}


class Answer:
    """One stored answer of a release judge or of the probe, as the test reads it."""

    def __init__(self, metric, conversation_id, raw):
        self.metric, self.conversation_id, self.raw = metric, conversation_id, raw
        self.set_id, self.prompt_name = parse_conversation_id(conversation_id)


def load_judgments(run):
    out = [Answer(judge, r["conversation_id"], r["raw"]) for scorer, judge in SCORERS.items()
           for r in load_all(run.path / judgment_file(scorer), dict)]
    return out + [Answer(p.fields["metric"], p.fields["conversation_id"], p.raw) for p in load_probes(run)]


def section(bench, run, judge, n_resamples=1000):
    return suite_of("opensafeintent").report.summarize(suite_inputs(run, bench, judge, n_resamples=n_resamples))


def export_run(bench, run, judge, out):
    return suite_of("opensafeintent").report.export(suite_inputs(run, bench, judge), out)


@pytest.fixture(scope="module")
def bench():
    return bench_with(20)


@pytest.fixture(scope="module")
def release(bench):
    return inputs_of(bench).release


@pytest.fixture(scope="module")
def ran(bench, release, tmp_path_factory):
    from support.scripted_server import ScriptedServer
    judges = rubric_judges({k: release.templates[k] for k in ANSWERS}, ANSWERS, "unexpected")
    with ScriptedServer(by_model({"target": rubric_judges({"intent_classification":
                                                           release.templates["intent_classification"]},
                                                          ANSWERS, target_reply),
                                  "judge": judges}), models=("target", "judge")) as srv:
        run = RunFolder(tmp_path_factory.mktemp("osi") / "run")
        run.path.mkdir(parents=True)
        (run.path / "run.json").write_text(json.dumps(run_json({"conditions": ["opensafeintent"]})))

        async def go():
            target = Endpoint(EndpointConfig(srv.base_url, "target"))
            judge = Endpoint(EndpointConfig(srv.base_url, "judge"))
            jobs, _ = plan_jobs(bench, ["opensafeintent"])
            gen = Generation(temperature=0.7, seed=0, max_tokens=64)     # the jobs' own settings win
            try:
                made = await rollout(jobs, bench, run, target, UserSimulator(target), gen=gen, show_progress=False)
                await judge_run(run, bench, judge, show_progress=False)
                probe, = suite_of("opensafeintent").probes
                await probe.run(ProbeContext(run, target, "judge", 8, bench))
                again = await rollout(jobs, bench, run, target, UserSimulator(target), gen=gen,
                                      show_progress=False)                 # a rerun generates nothing
                return made.new, again.new
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
    got = replies(run.transcripts())
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


def test_probe_asks_the_target_in_a_fresh_context(ran, bench, release):
    run, requests, *_ = ran
    probes = [b for b in requests if last_user_text(b).startswith(release.templates["intent_classification"][:40])]
    assert probes and all(b["model"] == "target" and len(b["messages"]) == 1 for b in probes)
    sec = section(bench, run, "judge", n_resamples=200)
    assert len(probes) == sec.intent_probe.considered <= cost(20)["intent_probe_at_most"]
    assert sum(sec.intent_probe.strategies[k].count for k in ("FULL", "CONSTRAINED", "REFUSE", "ERROR")) == len(probes)
    assert sec.intent_probe.strategies["ERROR"].count > 0                   # the bare "FULL" answers
    assert (run.path / PROBE_FILE).is_file() and all((run.path / judgment_file(s)).is_file() for s in SCORERS)


def test_section_matches_the_metrics_of_the_export(ran, bench, tmp_path):
    run, *_ = ran
    sec = section(bench, run, "judge", n_resamples=200)
    assert sec.n_sets == 20 and sec.unscored.helpfulness > 0 and sec.unscored.harmfulness > 0
    assert sec.unscored.helpfulness < 70 and sec.headline.triplet_safety.n > 0
    for m in HEADLINE:
        assert set(sec.to_json()[m]) == {"value", "n", "ci95"}
    paths = export_run(bench, run, "judge", tmp_path / "ref")
    rows = json.loads(paths["scored"].read_text())
    assert len(rows) == 20 and set(rows[0]["generated_prompts"]) == {"benign_prompt", "dual_use_prompt",
                                                                      "malicious_prompt"}
    back = summarize(read_reference(paths["scored"], paths["assistance_level"], paths["intent_classification"]),
                     n_resamples=200)
    for name in ("headline", "variants", "paraphrase", "response_modes", "intent_probe", "failure_profile",
                 "by_harm_domain", "by_task_type"):
        assert getattr(back, name) == getattr(sec, name), name
    md = to_markdown(section_blocks(sec))
    assert "## OpenSafeIntent" in md and "intent_calibrated_utility" in md


def test_cost_of_the_whole_release():
    full = load_release(SHIPPED)
    assert (len(full.sets), full.n_prompts) == (700, 4900)
    c = cost(None)
    assert (c["target"], c["helpfulness+harmfulness"], c["assistance_level"], c["intent_probe_at_most"]) == (
        4900, 9800, 700, 700)
