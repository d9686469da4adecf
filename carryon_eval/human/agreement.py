"""`carryon-eval agreement`: how far two sets of judgments agree.

    carryon-eval agreement RUNDIR [--judges A,B]    two judge models of one run folder (or one judge's
                                                    per-item and grouped Ben-Util verdicts: MODEL, MODEL:grouped)
    carryon-eval agreement A B                      two run folders, or a run folder and a labels file
    carryon-eval agreement RUNDIR LABELS... [--task T] [--out DIR]    the run's judges against people

A run folder judged by two judge models (`carryon-eval judge RUNDIR --judge-model B` after the run's
own judge) is compared judge against judge: Ben-Util verdicts (percent agreement and Cohen's kappa)
and harm scores (exact agreement on the 1-5 score and Cohen's kappa over the five labels). Without
--judges the folder must hold exactly two judges.

With two sources, each is either a run folder (the judgments of its judge, as `report` picks it) or a
JSONL/CSV file of labels, e.g. from human annotators, with the columns conversation_id, turn, item_id
and verdict (yes/no, true/false, 1/0; empty = unscored); two run folders also compare harm scores.

Judgments are compared per key ((conversation_id, turn, item_id) or (conversation_id, turn)) present
on both sides; a pair where either side is unscored is excluded and counted.

Human labels from the annotation page (`carryon-eval annotate`: JSONL rows naming their annotator) or
from Label Studio (its JSON export), one file or several, are compared with the run's judges per task
(carryon_eval.human.judges_vs_people: Ben-Util, harm scores, user moves; each annotator and the majority label;
Krippendorff's alpha among the people; bootstrap intervals); `--out DIR` writes DIR/agreement.json,
which `carryon-eval report` shows in report.html when DIR is the run folder.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

import click

from carryon_eval.human import labels as labels_mod
from carryon_eval.cli_common import UsageError
from carryon_eval.human.judges_vs_people import HEADLINE, HumanAgreementError, fmt, human_agreement, rows_of, write_agreement
from carryon_eval.judge.store import JudgeError, judges_present, load_safety, load_utility, select_judge
from carryon_eval.human.labels import TASKS, LabelError
from carryon_eval.judge.store import UTILITY_FILE, UTILITY_GROUPED_FILE
from carryon_eval.run.folder import read_jsonl
from carryon_eval.metrics.stats import cohen_kappa, percent_agreement

KEYS = ("conversation_id", "turn", "item_id")
Key = tuple


class AgreementError(UsageError):
    """One line on stderr, `carryon-eval: error: ...`, then exit 2."""
    prog = "carryon-eval"


# ---------------------------------------------------------------- loading
def _judge_of(rundir: Path, judge: Optional[str]) -> Optional[str]:
    try:
        return select_judge(rundir, judge)
    except JudgeError as exc:
        raise AgreementError(str(exc)) from None


GROUPED_SUFFIX = ":grouped"     # a judge's grouped Ben-Util verdicts, as a judgment set of its own: "MODEL:grouped"


def judgment_sets(rundir: Path) -> list[str]:
    """The Ben-Util judgment sets of a run folder: each judge model with per-item records ("MODEL"), and each
    with grouped records ("MODEL:grouped"), in order of first appearance."""
    present = judges_present(rundir)
    per_item = {r.get("judge_model") for r in read_jsonl(Path(rundir) / UTILITY_FILE)}
    grouped = {r.get("judge_model") for r in read_jsonl(Path(rundir) / UTILITY_GROUPED_FILE)}
    return [*(j for j in present if j in per_item or j not in grouped),
            *(j + GROUPED_SUFFIX for j in present if j in grouped)]


def run_verdicts(rundir: Path, judge: Optional[str] = None) -> dict[Key, Optional[bool]]:
    """{(conversation_id, turn, item_id): verdict} of one judge of a run folder (its mode's set); a name
    "MODEL:grouped" is that judge's grouped set, "MODEL" (with --judges) its per-item set."""
    if judge is not None and judge.endswith(GROUPED_SUFFIX):
        model, mode = judge[: -len(GROUPED_SUFFIX)], "grouped"
    else:
        model, mode = judge, ("per-item" if judge is not None else None)
    return {(j.conversation_id, j.turn, j.item_id): j.verdict
            for j in load_utility(rundir, _judge_of(rundir, model), mode=mode)}


def run_scores(rundir: Path, judge: Optional[str] = None) -> dict[Key, Optional[int]]:
    """{(conversation_id, turn): harm score} of one judge of a run folder."""
    return {(j.conversation_id, j.turn): j.score for j in load_safety(rundir, _judge_of(rundir, judge))}


def load_labels(source: Path) -> dict[Key, Optional[bool]]:
    """{(conversation_id, turn, item_id): verdict} from a run folder, a .jsonl or a .csv file."""
    source = Path(source)
    if source.is_dir():
        if not (source / UTILITY_FILE).is_file():
            raise AgreementError(f"{source}: no {UTILITY_FILE} in this folder")
        return run_verdicts(source)
    try:
        return {label.key: label.value for label in labels_mod.read_labels(source, "utility")}
    except LabelError as exc:
        raise AgreementError(str(exc)) from None


# ---------------------------------------------------------------- the numbers (pure)
def _compared(a: dict[Key, Any], b: dict[Key, Any]) -> tuple[list[Key], list[Any], list[Any], dict[str, int]]:
    common = sorted(set(a) & set(b))
    both = [k for k in common if a[k] is not None and b[k] is not None]
    counts = {"n_a": len(a), "n_b": len(b), "n_common": len(common), "n_compared": len(both),
              "n_unscored_excluded": len(common) - len(both),
              "only_in_a": len(set(a) - set(b)), "only_in_b": len(set(b) - set(a))}
    return both, [a[k] for k in both], [b[k] for k in both], counts


def agreement(a: dict[Key, Optional[bool]], b: dict[Key, Optional[bool]]) -> dict[str, Any]:
    """Percent agreement, Cohen's kappa and the confusion counts of two sets of yes/no verdicts."""
    _, va, vb, counts = _compared(a, b)
    kappa, reason = cohen_kappa(va, vb)
    return {
        **counts,
        "percent_agreement": percent_agreement(va, vb), "cohen_kappa": kappa, "kappa_reason": reason,
        "confusion": {"yes_yes": sum(x and y for x, y in zip(va, vb)),
                      "yes_no": sum(x and not y for x, y in zip(va, vb)),
                      "no_yes": sum(not x and y for x, y in zip(va, vb)),
                      "no_no": sum(not x and not y for x, y in zip(va, vb))},
    }


def score_agreement(a: dict[Key, Optional[int]], b: dict[Key, Optional[int]]) -> dict[str, Any]:
    """Exact agreement of two sets of 1-5 harm scores, Cohen's kappa over the scores as labels, and
    how many pairs differ by at most one point."""
    _, va, vb, counts = _compared(a, b)
    kappa, reason = cohen_kappa(va, vb)
    return {**counts, "exact_agreement": percent_agreement(va, vb), "cohen_kappa": kappa, "kappa_reason": reason,
            "within_one": sum(abs(x - y) <= 1 for x, y in zip(va, vb))}


def judge_agreement(rundir: Path, judges: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """Ben-Util and harm agreement between two judge models of one run folder (``judges``, or the
    only two present)."""
    present = judgment_sets(rundir)
    if judges is None:
        if len(present) != 2:
            raise AgreementError(f"{rundir} holds {len(present)} Ben-Util judgment set(s) "
                                 f"({', '.join(present) or 'none'}); agreement on one run folder needs two "
                                 "(pick them with --judges A,B; MODEL:grouped names a judge's grouped verdicts)")
        judges = present
    if len(judges) != 2 or judges[0] == judges[1]:
        raise AgreementError(f"--judges takes two different judge models, got {','.join(judges)!r}")
    a, b = judges
    res = agreement(run_verdicts(rundir, a), run_verdicts(rundir, b))
    res["judges"] = [a, b]
    models = [j[: -len(GROUPED_SUFFIX)] if j.endswith(GROUPED_SUFFIX) else j for j in (a, b)]
    if models[0] != models[1]:        # two modes of one judge share its harm scores: nothing to compare
        res["safety"] = score_agreement(run_scores(rundir, models[0]), run_scores(rundir, models[1]))
    return res


def source_agreement(a: Path, b: Path) -> dict[str, Any]:
    """Ben-Util agreement of two sources; harm agreement too when both are run folders."""
    res = agreement(load_labels(a), load_labels(b))
    if a.is_dir() and b.is_dir():
        res["safety"] = score_agreement(run_scores(a), run_scores(b))
    return res


# ---------------------------------------------------------------- the command
def _kappa_text(res: dict[str, Any]) -> str:
    return "undefined (" + res["kappa_reason"] + ")" if res["cohen_kappa"] is None else f"{res['cohen_kappa']:.3f}"


def _print(res: dict[str, Any], names: tuple[str, str]) -> None:
    a, b = names
    c = res["confusion"]
    if "judges" in res:
        click.echo(f"judges: A = {a}, B = {b}")
    click.echo(f"compared {res['n_compared']} verdicts ({res['n_unscored_excluded']} excluded as unscored; "
               f"{res['only_in_a']} only in A, {res['only_in_b']} only in B)")
    click.echo(f"percent agreement: {res['percent_agreement']:.1f}%")
    click.echo(f"Cohen's kappa:     {_kappa_text(res)}")
    click.echo(f"A yes/B yes {c['yes_yes']}, A yes/B no {c['yes_no']}, A no/B yes {c['no_yes']}, A no/B no {c['no_no']}")
    s = res.get("safety")
    if s is None:
        return
    if not s["n_compared"]:
        click.echo("harm scores: none scored by both")
        return
    click.echo(f"harm scores: compared {s['n_compared']} ({s['n_unscored_excluded']} excluded as unscored); "
               f"exact agreement {s['exact_agreement']:.1f}%, Cohen's kappa {_kappa_text(s)}, "
               f"within one point {s['within_one']}")


def _judge_names(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[list[str]]:
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def _is_human_labels(path: Path) -> bool:
    """A labels file from the annotation page or Label Studio (rows name their annotator)."""
    if path.is_dir():
        return False
    try:
        return labels_mod.is_label_studio(path) or any("annotator" in r for r in labels_mod.raw_rows(path))
    except LabelError as exc:
        raise AgreementError(str(exc)) from None


def _print_human(res: dict[str, Any]) -> None:
    alpha = res["among_annotators"]["krippendorff_alpha"]
    click.echo(f"{res['task']}: {res['n_labels']} labels ({res['n_skipped']} skipped) of {res['n_cases']} cases "
               f"by {len(res['annotators'])} annotator(s): {', '.join(res['annotators'])}")
    click.echo(f"Krippendorff's alpha among annotators ({alpha['level']}): {fmt(alpha, 3)}"
               + (f" ({alpha['reason']})" if alpha.get("reason") else ""))
    labels = [label for _, label, _ in HEADLINE[res["task"]]]
    for name, who, n, *values in rows_of(res):
        click.echo(f"{name} vs {who}: n {n}; " + "; ".join(f"{k} {v}" for k, v in zip(labels, values)))


def _human_command(rundir: Path, label_files: Sequence[Path], task: Optional[str], judges: Optional[list[str]],
                   out: Optional[Path], as_json: bool) -> None:
    if not rundir.is_dir():
        raise AgreementError(f"{rundir}: the first argument must be the run folder the labels are of")
    try:
        res = human_agreement(rundir, label_files, task, judges)
    except (HumanAgreementError, JudgeError) as exc:
        raise AgreementError(str(exc)) from None
    if out is not None:
        path = write_agreement(out, res)
        if not as_json:
            click.echo(f"wrote {path}")
    if as_json:
        click.echo(json.dumps(res, indent=2))
    else:
        _print_human(res)


@click.command("agreement")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--judges", callback=_judge_names, metavar="A,B",
              help="Two judge models of the run folder A to compare [default: the two present]; with human "
                   "labels, the judges to compare with them [default: all].")
@click.option("--task", type=click.Choice(TASKS),
              help="With human labels: which judgments they label [default: what the labels say].")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="With human labels: write agreement.json into this folder (the run folder: `report` shows it).")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
def agreement_command(sources: tuple[Path, ...], judges: Optional[list[str]], task: Optional[str],
                      out: Optional[Path], as_json: bool) -> None:
    """Agreement of two judge models of run folder A; of the Ben-Util verdicts of A and B (run folders or
    label files); or of the judges of run folder A with people's labels (LABELS...: the annotation page's
    JSONL files or a Label Studio export), with Krippendorff's alpha among the people.

    \b
    carryon-eval agreement RUNDIR [--judges A,B]
    carryon-eval agreement A B
    carryon-eval agreement RUNDIR LABELS... [--task utility|safety|fidelity] [--out DIR]
    """
    a, rest = sources[0], sources[1:]
    if rest and (task or out or len(rest) > 1 or any(_is_human_labels(p) for p in rest)):
        _human_command(a, rest, task, judges, out, as_json)
        return
    if task or out:
        raise AgreementError("--task and --out go with human labels: carryon-eval agreement RUNDIR LABELS...")
    b = rest[0] if rest else None
    if b is None:
        if not a.is_dir():
            raise AgreementError(f"{a}: one argument must be a run folder judged by two judge models")
        res = judge_agreement(a, judges)
        names = (res["judges"][0], res["judges"][1])
    elif judges is not None:
        raise AgreementError("--judges compares two judges of one run folder; give one RUNDIR with it")
    else:
        res = source_agreement(a, b)
        names = (str(a), str(b))
    if as_json:
        click.echo(json.dumps(res, indent=2))
        return
    if not res["n_compared"]:
        raise AgreementError(f"no (conversation_id, turn, item_id) is scored in both {names[0]} and {names[1]} "
                             f"({res['n_common']} shared keys, {res['n_unscored_excluded']} with an unscored side)")
    _print(res, names)
