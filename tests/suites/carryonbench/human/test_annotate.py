"""`carryon-eval annotate` (the sampler, the page, Label Studio interop) and the agreement of judges with
people (every statistic against a hand computation, agreement.json, its section in report.html)."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.annotation_run import JUDGE, annotation_run

from carryon_eval.metrics.number import Number
from carryon_eval.run.folder import RunFolder
from carryon_eval.suites.carryonbench.human import stats as S
from carryon_eval.suites.carryonbench.human.annotate import sample_cases
from carryon_eval.cli import cli
from carryon_eval.dataset.load import load_benchmark
from carryon_eval.moves import MOVES


@pytest.fixture
def run(tmp_path: Path, dataset: Path) -> Path:
    return annotation_run(tmp_path / "run", dataset)


def _invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


# ---------------------------------------------------------------- the sampler
@pytest.mark.parametrize("task", ["utility", "safety", "fidelity"])
def test_sampler_is_reproducible_and_covers_every_stratum(run: Path, dataset: Path, task: str) -> None:
    bench = load_benchmark(str(dataset))
    everything = sample_cases(RunFolder(run), bench, task, 10_000, seed=0)
    strata = Counter(c.stratum for c in everything)
    picked = sample_cases(RunFolder(run), bench, task, len(strata) + 3, seed=7)
    assert [c.case_id for c in picked] == [c.case_id for c in sample_cases(RunFolder(run), bench, task, len(strata) + 3, seed=7)]
    assert set(c.stratum for c in picked) == set(strata)           # every stratum is drawn from
    assert len(picked) == len(strata) + 3 and len({c.case_id for c in picked}) == len(picked)
    other = sample_cases(RunFolder(run), bench, task, len(strata) + 3, seed=8)
    assert [c.case_id for c in other] != [c.case_id for c in picked]
    assert all(c.task == task for c in picked)
    if task == "utility":
        assert {"bc/yes", "bc/no", "nc/yes", "nc/no", "turn1/yes", "oracle/no", "bc/unscored"} <= set(strata)
    if task == "safety":
        assert {f"bc/{s}" for s in range(1, 6)} <= set(strata)
    if task == "fidelity":
        assert {s.split("/")[1] for s in strata} == set(MOVES)       # every move is represented
        assert {s.split("/")[0] for s in strata} == {"bc", "nc"}


def test_sampler_never_holds_the_judges_answer(run: Path, dataset: Path) -> None:
    bench = load_benchmark(str(dataset))
    for case in sample_cases(RunFolder(run), bench, "safety", 50, seed=0):
        assert set(case.show) == {"query", "reply"}
    for case in sample_cases(RunFolder(run), bench, "utility", 50, seed=0):
        assert set(case.show) == {"query", "reply", "item"}
        assert case.show["item"].startswith("Does the response give made-up fact")


# ---------------------------------------------------------------- the page and the command
def test_annotate_writes_one_self_contained_page(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    res = _invoke("annotate", run, "--task", "safety", "--sample", 12, "--seed", 3, "--out", out)
    assert res.exit_code == 0, res.output
    assert "12 safety cases" in res.output and "bc/5 1" in res.output
    page = out.read_text()
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page)         # nothing loaded from anywhere
    data = json.loads(re.search(r"const DATA = (.*);\n</script>", page).group(1))
    assert data["task"] == "safety" and len(data["cases"]) == 12 and len(data["rubric"]) == 5
    assert JUDGE not in json.dumps(data["cases"]) and '"score"' not in json.dumps(data["cases"])
    again = tmp_path / "again.html"
    _invoke("annotate", run, "--task", "safety", "--sample", 12, "--seed", 3, "--out", again)
    assert again.read_text() == page                                    # the same page from the same seed
    # the default file name lives in the run folder
    res = _invoke("annotate", run, "--task", "fidelity", "--sample", 5)
    assert res.exit_code == 0 and (run / "annotate-fidelity-seed0.html").is_file()


def test_annotate_bad_input_is_one_line(tmp_path: Path, dataset: Path) -> None:
    bare = annotation_run(tmp_path / "bare", dataset)
    (bare / "safety_judgments.jsonl").write_text("")
    res = _invoke("annotate", bare, "--task", "safety", "--sample", 3, "--out", tmp_path / "x.html")
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert "carryon-eval: error:" in res.output and "no safety judgments" in res.output
    assert not (tmp_path / "x.html").exists()
    res = _invoke("annotate", tmp_path / "nowhere", "--task", "safety")
    assert res.exit_code == 2 and "carryon-eval: error:" in res.output


# ---------------------------------------------------------------- Label Studio
def _ls_export(tasks: list[dict[str, Any]], answers: dict[str, list[Any]], field: str) -> list[dict[str, Any]]:
    """A Label Studio JSON export: each task with one annotation per user (None: no annotation)."""
    export = []
    for n, t in enumerate(tasks):
        anns = [{"id": 100 * n + u, "completed_by": {"id": u, "email": who}, "was_cancelled": False,
                 "result": [{"from_name": field, "to_name": "reply", "type": "choices",
                             "value": {"choices": [str(values[n])]}}]}
                for u, (who, values) in enumerate(answers.items()) if values[n] is not None]
        export.append({"id": n + 1, "data": t["data"], "annotations": anns, "predictions": []})
    return export


def test_label_studio_tasks_config_and_export(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "ls.json"
    res = _invoke("annotate", run, "--task", "safety", "--sample", 6, "--seed", 2, "--format", "label-studio",
                  "--out", out)
    assert res.exit_code == 0, res.output
    tasks = json.loads(out.read_text())
    config = (tmp_path / "ls.label_config.xml").read_text()
    assert len(tasks) == 6 and {"query", "reply", "conversation_id", "turn"} <= set(tasks[0]["data"])
    assert '<Choices name="score" toName="reply"' in config and config.count("<Choice ") == 5
    scores = {(r["conversation_id"], r["turn"]): r["score"] for r in map(json.loads, (run / "safety_judgments.jsonl")
                                                                        .read_text().splitlines())}
    judge = [scores[(t["data"]["conversation_id"], t["data"]["turn"])] for t in tasks]
    # two people: Ann gives the judge's score +1 (capped at 5) on every case; Bob equals the judge on the
    # first four and leaves the last two unlabeled
    ann = [min(s + 1, 5) for s in judge]
    bob = judge[:4] + [None, None]
    export = tmp_path / "export.json"
    export.write_text(json.dumps(_ls_export(tasks, {"ann@x.org": ann, "bob@x.org": bob}, "score")))
    res = _invoke("agreement", run, export, "--json")
    assert res.exit_code == 0, res.output
    out_json = json.loads(res.output)
    assert out_json["task"] == "safety" and out_json["annotators"] == ["ann@x.org", "bob@x.org"]
    vs = out_json["references"][JUDGE]["vs_annotators"]
    assert vs["bob@x.org"]["n"] == 4 and vs["bob@x.org"]["exact_agreement"]["value"] == 100.0
    assert vs["ann@x.org"]["n"] == 6 and vs["ann@x.org"]["within_one"]["value"] == 100.0
    exact = 100 * sum(a == s for a, s in zip(ann, judge)) / 6
    assert vs["ann@x.org"]["exact_agreement"]["value"] == pytest.approx(exact)
    assert vs["ann@x.org"]["quadratic_kappa"]["value"] == pytest.approx(S.quadratic_kappa(judge, ann))
    # an annotation row naming an unknown score is one line, exit 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_ls_export(tasks, {"c@x.org": [9] * 6}, "score")))
    res = _invoke("agreement", run, bad)
    assert res.exit_code == 2 and "not a whole number from 1 to 5" in res.output


# ---------------------------------------------------------------- the statistics, by hand
def test_harm_statistics_by_hand() -> None:
    judge = [1, 2, 3, 4, 5, 1]
    human = [1, 3, 3, 2, 5, 2]
    assert S.percent_agreement(judge, human) == pytest.approx(100 * 3 / 6)
    assert S.within_one(judge, human) == pytest.approx(100 * 5 / 6)            # only 4 vs 2 is off by two
    # quadratic weights (d/4)^2: observed sum (1 + 4 + 1) / 16 / 6 = 6/96; expected from the margins
    # judge {1: 2, 2: 1, 3: 1, 4: 1, 5: 1}, human {1: 1, 2: 2, 3: 2, 5: 1}: sum_ij p_i q_j (i-j)^2 / 16
    p = {1: 2 / 6, 2: 1 / 6, 3: 1 / 6, 4: 1 / 6, 5: 1 / 6}
    q = {1: 1 / 6, 2: 2 / 6, 3: 2 / 6, 5: 1 / 6}
    expected = sum(p[i] * q[j] * (i - j) ** 2 / 16 for i in p for j in q)
    assert S.quadratic_kappa(judge, human) == pytest.approx(1 - (6 / 96) / expected)
    assert S.quadratic_kappa([1, 2, 3], [2, 3, 4]) == pytest.approx(12 / 21)
    assert S.quadratic_kappa([3, 3], [3, 3]) is None
    # Spearman with ties: ranks judge [1.5, 3, 4, 5, 6, 1.5], human [1, 4.5, 4.5, 2.5, 6, 2.5] (average ranks)
    assert S.spearman_rho([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    ra, rb = [1.5, 3, 4, 5, 6, 1.5], [1, 4.5, 4.5, 2.5, 6, 2.5]
    ma, mb = sum(ra) / 6, sum(rb) / 6
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    rho = cov / (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    assert S.spearman_rho(judge, human) == pytest.approx(rho)
    assert S.spearman_rho([2, 2, 2], [1, 2, 3]) is None
    stats = S.score_stats(judge, human)
    assert stats.confusion["4"]["2"] == 1 and stats.n == 6


def test_move_accuracy_and_confusion_by_hand() -> None:
    intended = ["pushback", "pushback", "delaying", "rephrasing"]
    human = ["pushback", "rephrasing", "delaying", "rephrasing"]
    stats = S.move_stats(intended, human)
    assert stats.accuracy.value == 75.0
    assert stats.confusion["pushback"]["rephrasing"] == 1 and stats.confusion["pushback"]["pushback"] == 1
    assert sum(sum(row.values()) for row in stats.confusion.values()) == 4
    # its JSON (agreement.json's): the statistics of the task only, each with its interval
    assert list(stats.to_json()) == ["n", "accuracy", "confusion"]
    assert S.Agreement.from_json(stats.to_json()) == stats


def test_krippendorff_majority_and_bootstrap_by_hand() -> None:
    # nominal, two coders, four cases: coincidences o11 = 2, o12 = o21 = 1, o22 = 4; n = 8, n1 = 3, n2 = 5
    # alpha = 1 - (n - 1) * (o12 + o21) / (2 * n1 * n2) = 1 - 7 * 2 / 30 = 16/30
    assert S.krippendorff_alpha([[1, 1, 2, 2], [1, 2, 2, 2]], "nominal") == pytest.approx(16 / 30)
    assert S.krippendorff_alpha([[True, True, False, None], [True, False, False, False]], "nominal") \
        == pytest.approx(1 - 5 * 1 * 2 / (2 * 3 * 3))   # cases with two labels: n = 6, n_yes = n_no = 3
    assert S.krippendorff_alpha([[1, 1], [1, 1]], "nominal") is None          # one value: undefined
    assert S.krippendorff_alpha([[1, 2]], "nominal") is None                  # one annotator
    assert S.majority(["yes", "no", "yes", None]) == "yes"
    assert S.majority(["yes", "no"]) is None and S.majority([None]) is None
    same = S.with_ci(S.percent_agreement, [1, 2, 3, 4], [1, 2, 3, 4])
    assert same.number == Number(100.0, ci95=[100.0, 100.0])
    assert S.Statistic.from_json(same.to_json()) == same and len(same.to_json()) == 2     # value and interval
    ci = S.bootstrap_ci(S.percent_agreement, [1, 2, 3, 4, 5, 1], [1, 3, 3, 2, 5, 2])
    assert ci is not None and ci[0] <= 50.0 <= ci[1] and 0 <= ci[0] < ci[1] <= 100
    assert ci == S.bootstrap_ci(S.percent_agreement, [1, 2, 3, 4, 5, 1], [1, 3, 3, 2, 5, 2])   # seeded


# ---------------------------------------------------------------- several annotators, agreement.json, the report
def _labels(path: Path, who: str, task: str, rows: list[tuple[str, int, Any]]) -> Path:
    field = {"safety": "score", "fidelity": "move"}[task]
    path.write_text("".join(json.dumps({"annotator": who, "task": task, "conversation_id": c, "turn": t,
                                        field: v}) + "\n" for c, t, v in rows))
    return path


def test_fidelity_labels_of_two_people_against_the_intended_move(run: Path, tmp_path: Path) -> None:
    # c1 turn 2 is benign_justification; c3 turns 2, 3, 4 are pushback, backchannel, rephrasing
    a = _labels(tmp_path / "a.jsonl", "A", "fidelity",
                [("c1", 2, "benign_justification"), ("c3", 2, "pushback"), ("c3", 3, "delaying"),
                 ("c3", 4, "rephrasing")])
    b = _labels(tmp_path / "b.jsonl", "B", "fidelity",
                [("c1", 2, "benign_justification"), ("c3", 2, "pushback"), ("c3", 3, "backchannel"),
                 ("c3", 4, None)])
    res = _invoke("agreement", run, a, b, "--json", "--out", run)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    ref = out["references"]["intended move"]
    assert ref["vs_annotators"]["A"]["accuracy"]["value"] == 75.0
    assert ref["vs_annotators"]["A"]["confusion"]["backchannel"]["delaying"] == 1
    assert ref["vs_annotators"]["B"]["n"] == 3 and ref["vs_annotators"]["B"]["accuracy"]["value"] == 100.0
    # majority: c3 turn 3 ties (delaying vs backchannel) -> no majority; c3 turn 4 has only A's label
    assert ref["vs_majority"]["n"] == 3 and ref["vs_majority"]["accuracy"]["value"] == 100.0
    assert out["n_majority_ties"] == 1 and out["n_skipped"] == 1
    # alpha over the three cases both labeled: values bj, bj | pb, pb | dl, bk -> n = 6, one disagreeing case
    # o(dl,bk) = o(bk,dl) = 1; n_bj = 2, n_pb = 2, n_dl = 1, n_bk = 1; sum_{c!=k} n_c n_k = 36 - (4+4+1+1) = 26
    assert out["among_annotators"]["krippendorff_alpha"]["value"] == pytest.approx(1 - 5 * 2 / 26)
    saved = json.loads((run / "agreement.json").read_text())
    assert saved["tasks"]["fidelity"]["annotators"] == ["A", "B"]
    text = _invoke("agreement", run, a, b)
    assert "intended move vs majority: n 3; accuracy % 100.0" in text.output
    assert "Intended move (rows)" in (run / "agreement.html").read_text()


def test_report_includes_the_agreement_section(run: Path, dataset: Path, tmp_path: Path) -> None:
    from carryon_eval.report.phase import write_report

    bench = load_benchmark(str(dataset))
    write_report(RunFolder(run), bench, n_resamples=50)
    assert "Judges against people" not in (run / "report.html").read_text()
    a = _labels(tmp_path / "a.jsonl", "A", "safety", [("c1", 1, 2), ("c1", 2, 3), ("c2", 1, 5)])
    res = _invoke("agreement", run, a, "--out", run)
    assert res.exit_code == 0 and "wrote" in res.output
    write_report(RunFolder(run), bench, n_resamples=50)
    html = (run / "report.html").read_text()
    assert "Judges against people" in html and "quadratic κ" in html and "majority" in html
    assert "Judges against people" in (run / "agreement.html").read_text()


def test_labels_that_fit_no_case_of_the_run_are_one_line(run: Path, tmp_path: Path) -> None:
    a = _labels(tmp_path / "a.jsonl", "A", "safety", [("zz", 1, 2)])
    res = _invoke("agreement", run, a)
    assert res.exit_code == 2 and "none of the 1 labeled cases" in res.output and res.output.count("\n") == 1
    res = _invoke("agreement", run, a, "--task", "fidelity")
    assert res.exit_code == 2 and "no fidelity labels in" in res.output
    assert res.output.startswith("carryon-eval: error: ")
    b = tmp_path / "b.jsonl"
    b.write_text(json.dumps({"annotator": "B", "conversation_id": "c1", "turn": 1, "verdict": "yes"}) + "\n")
    res = _invoke("agreement", run, b, "--task", "fidelity")
    assert res.exit_code == 2 and "has no 'move'" in res.output
