"""Adding a benchmark is adding a wing: a fourth suite, written here into a temporary package outside the
evaluator (its record, one scorer, one metric function, one report section and one leaderboard column) and
installed the way a third-party package would be (an entry point of the group ``carryon_eval.suites``), runs end
to end against the scripted server without any edit to another module: the dry run plans it, results.json,
table.md and report.html show its section, and `compare --out` puts its column on the leaderboard. It does so with
CarryOnBench's suite registered beside it and with it unregistered (report/'s frame asks whatever suites there
are for their parts: none of them is the frame)."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest
from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler
from support.scripted_server import last_user_text

from carryon_eval.judge import scorers as S
from carryon_eval.suite import registry

WING = "shortwing"
QUESTION = "Is this reply at most three words long?"

FILES = {
    "__init__.py": '"""A copied wing: short replies."""\n',
    "scorer.py": f'''
        """Its one scorer: is the reply short (yes / no)."""
        from carryon_eval.judge.scorers import Case, Judgment, ask_text, register
        from carryon_eval.parsing import parse_yes_no

        QUESTION = {QUESTION!r}


        @register
        class ShortScorer:
            name, stage, value_field, prompt_version = "short", "judge_short", "short", "shortwing/short@1"

            def __init__(self, settings):
                self.settings = settings

            def prompt_refs(self):
                return {{self.name: self.prompt_version}}

            async def score(self, endpoint, case: Case) -> Judgment:
                return await ask_text(endpoint, f"{{QUESTION}}\\n<reply>\\n{{case.reply}}\\n</reply>", parse_yes_no,
                                      stage=self.stage, max_tokens=8, strict="Answer yes or no.")

            def cases(self, transcript, reply, bench):
                return [((transcript.conversation_id, reply.turn), Case(reply=reply.content))]
    ''',
    "metrics.py": '''
        """Its one metric: the share of short replies among the scored ones."""


        def short_share(verdicts):
            scored = [v for v in verdicts if v is not None]
            return {"n_replies": len(verdicts), "scored": len(scored),
                    "short_share": 100.0 * sum(scored) / len(scored) if scored else None}
    ''',
    "record.py": '''
        """The wing's record: one single-turn job per query, judged by its scorer, summarized and rendered."""
        from carryon_eval.suite import (Cell, Column, Job, ScorerUse, Suite, SuiteLeaderboard, SuiteReport,
                                        register_suite)
        from carryon_eval.metrics.number import Number
        from carryon_eval.report.blocks import HTML, MARKDOWN, Heading, Only, Section, Shown, Text
        from shortwing import scorer  # noqa: F401 - registers the wing's scorer
        from shortwing.metrics import short_share

        CONDITION = "short"


        def plan(bench, conditions, settings):
            return [Job(f"short:{qid}", qid, CONDITION, prompt=f"Briefly: {q['query']}")
                    for qid, q in bench.queries.items()], []


        def summarize(inputs):
            mine = {t.conversation_id for t in inputs.transcripts if t.condition == CONDITION}
            if not mine:
                return None
            return short_share([r.short for r in inputs.records("short") if r.conversation_id in mine])


        def blocks(section):
            share = Shown(Number(section["short_share"]))
            return [Section("short", [Heading("Short replies"),
                                      Only(MARKDOWN, [Text(["short: ", share, f"% of {section['scored']}"])]),
                                      Only(HTML, [Text(["short share ", share, "%"])])])]


        def leaderboard(runs):
            if not any(e.results.sections.get("short") for e in runs):
                return []
            cells = [Cell((e.results.sections.get("short") or {}).get("short_share")) for e in runs]
            return [(Column("short.share", "Short %", "Short replies", better="higher"), cells)]


        SHORT = register_suite(Suite(
            name="short", conditions=(CONDITION,), plan=plan, default=False, uses=(ScorerUse("short"),),
            report=SuiteReport(section="short", summarize=summarize, blocks=blocks,
                               leaderboard=SuiteLeaderboard(columns=leaderboard)),
            description="replies of at most three words"))
    ''',
}


@pytest.fixture
def installed_wing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The wing's files in a folder on sys.path, with the entry point its distribution declares."""
    root = tmp_path / "site"
    (root / WING).mkdir(parents=True)
    for name, text in FILES.items():
        (root / WING / name).write_text(textwrap.dedent(text).lstrip("\n"))
    info = root / f"{WING}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {WING}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[carryon_eval.suites]\nshort = {WING}.record\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setattr(registry, "_loaded", False)          # found again, with the new entry point
    yield root
    registry.unregister_suite("short")
    S.REGISTRY.pop("short", None)
    for name in [m for m in sys.modules if m == WING or m.startswith(WING + ".")]:
        del sys.modules[name]


@pytest.fixture(params=["beside CarryOnBench", "CarryOnBench unregistered"])
def registered(request: pytest.FixtureRequest, installed_wing: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The suites registered for the run: every one found (the copied wing's too), or those without CarryOnBench's
    (taken out of the registry for the test, put back after it)."""
    registry.suites()                                        # found once, the copied wing with them
    if request.param == "CarryOnBench unregistered":
        monkeypatch.delitem(registry._REGISTRY, "carryonbench")
    return [s.name for s in registry.suites()]


def handler(body: dict) -> Any:
    text = last_user_text(body)
    if body["model"] == "tgt" and text.startswith("Briefly: "):
        return "Use the key." if "pinball" in text else f"I would rather answer at length: {text[9:]}"
    if body["model"] == "jdg" and text.startswith(QUESTION):
        reply = text.split("<reply>\n", 1)[1].split("\n</reply>", 1)[0]
        return "yes" if len(reply.split()) <= 3 else "no"
    return evaluator_handler(body)


def test_a_copied_wing_runs_end_to_end(registered, scripted_server, dataset, tmp_path):
    assert "short" in registered
    srv = scripted_server(handler, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    args = [*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "short"]

    dry = invoke(*args, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.stdout.strip().splitlines()[-1])
    assert plan["roles"]["target"]["short"]["calls"] == 3 and plan["judge_by_scorer"] == {"short": 3}
    assert srv.count() == 0

    res = invoke(*args)
    assert res.exit_code == 0, res.output
    assert srv.count(lambda b: b["model"] == "tgt") == 3 and srv.count(lambda b: b["model"] == "jdg") == 3
    results = json.loads((out / "results.json").read_text())
    assert results["short"] == {"n_replies": 3, "scored": 3, "short_share": pytest.approx(100 / 3)}
    assert "conditions" not in results and "recovery" not in results        # no CarryOnBench block: not its run
    assert "## Short replies\n\nshort: 33.3% of 3" in (out / "table.md").read_text()
    assert '<section id="short"><h2>Short replies</h2><p>short share 33.3%</p></section>' in (
        out / "report.html").read_text()

    board = tmp_path / "board"
    compared = invoke("compare", out, "--out", board)
    assert compared.exit_code == 0, compared.output
    row = json.loads((board / "leaderboard.jsonl").read_text().splitlines()[0])
    assert json.dumps(row).count("short.share") >= 1
    assert "Short %" in (board / "leaderboard.html").read_text()
