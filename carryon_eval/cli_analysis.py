"""`carryon-eval compare` and `carryon-eval agreement` on the command line: the commands that read finished run
folders. Their numbers are computed in carryon_eval.report.compare and CarryOnBench's human validation
(carryon_eval.suites.carryonbench.human.agreement); here are the options, the lines printed, and their errors as the
CLI's one line (exit 2). The agreement command imports CarryOnBench's wing when it runs (or its help is shown), so
that importing the CLI imports no wing."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional, Sequence

import click

from carryon_eval.cli_common import LateCommand, UsageError
from carryon_eval.judge.store import JudgeError
from carryon_eval.report.compare import OUT_FILES, CompareError, compare, compare_plots, render_markdown
from carryon_eval.report.leaderboard_page import LeaderboardError, write_board
from carryon_eval.run.paths import shared_path
from carryon_eval.run.folder import RunFolder
from carryon_eval.run.results import PlotsInfo, Results


class AnalysisError(UsageError):
    """One line on stderr, `carryon-eval: error: ...`, then exit 2."""
    prog = "carryon-eval"


# ---------------------------------------------------------------- compare
@click.command("compare")
@click.argument("rundirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write compare.json, table.md, plots/, leaderboard.html and leaderboard.jsonl here (otherwise only print).")
@click.option("--paper-rows", is_flag=True,
              help="Also show the paper's reported Table 2 rows (14 models) beside the runs, in a group of their own: "
                   "never ranked with them, no intervals (status 'reported' in leaderboard.jsonl).")
def compare_command(rundirs: tuple[Path, ...], out: Optional[Path], paper_rows: bool) -> None:
    """Table 2, Spearman correlations and mixed models across the runs in RUNDIR... (each needs a report)."""
    write_comparison(rundirs, out, paper_rows)


def write_comparison(rundirs: Sequence[Path], out: Optional[Path], paper_rows: bool = False) -> None:
    """compare's table and notes printed; with ``out``: compare.json, table.md, plots/ and the leaderboard there
    (``paper_rows``: and the rows the paper reports, apart)."""
    if out is not None:
        _refuse_run_folder(out, rundirs)
    try:
        cmp = compare(rundirs, paper_rows)
    except CompareError as exc:
        raise AnalysisError(str(exc)) from None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        cmp.plots = _write_plots(cmp.results, out / "plots")
        try:
            board = write_board(out, cmp, paper_rows)   # leaderboard.html, .jsonl
        except LeaderboardError as exc:
            raise AnalysisError(str(exc)) from None
        cmp.family = board.family
        cmp.notes += board.notes
        cmp.leaderboard = board.files
    text = render_markdown(cmp)
    click.echo(text)
    for note in cmp.notes:
        if note.startswith("WARNING"):          # e.g. Ben-Util judged in different modes
            click.echo(note, err=True)
    if out is None:
        return
    cmp.runs = [shared_path(run, out) for run in cmp.runs]          # relative to OUT, never the machine's
    json_file, table_file = OUT_FILES[:2]
    (out / json_file).write_text(json.dumps(cmp.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / table_file).write_text(text, encoding="utf-8")
    click.echo(f"comparison written to {out}")


def _refuse_run_folder(out: Path, rundirs: Sequence[Path]) -> None:
    """compare's files (table.md, plots/ ...) never land in a run folder, where they would overwrite its own."""
    if RunFolder(out).exists() or any(os.path.realpath(out) == os.path.realpath(d) for d in rundirs):
        raise AnalysisError(f"--out {out} is a run folder: compare's {', '.join(OUT_FILES)} would overwrite its "
                            "own; give a folder of its own, e.g. --out leaderboard")


def _write_plots(results: Sequence[Results], outdir: Path) -> PlotsInfo:
    """Draw the comparison figures into outdir: what compare.json says of them (files, skipped: {name: reason},
    note)."""
    from carryon_eval.report.plots import PlotsUnavailable, write_pngs

    try:
        images, skipped = compare_plots(results)
    except PlotsUnavailable as exc:
        click.echo(str(exc), err=True)
        return PlotsInfo(note=str(exc))
    paths = write_pngs(images, outdir, stale=skipped)
    for name, reason in skipped.items():
        click.echo(f"plot {name} not drawn: {reason}", err=True)
    return PlotsInfo([f"plots/{p.name}" for p in paths], dict(skipped))


# ---------------------------------------------------------------- agreement
def _judge_names(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[list[str]]:
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def _print_human(res: Any) -> None:
    """A TaskAgreement (carryon_eval.suites.carryonbench.human.judges_vs_people) as lines."""
    from carryon_eval.report.blocks import plain
    from carryon_eval.suites.carryonbench.human.judges_vs_people import HEADLINE, alpha_shown, rows_of

    click.echo(f"{res.task}: {res.n_labels} labels ({res.n_skipped} skipped) of {res.n_cases} cases "
               f"by {len(res.annotators)} annotator(s): {', '.join(res.annotators)}")
    click.echo(f"Krippendorff's alpha among annotators ({res.among_annotators.krippendorff_alpha.level}): "
               f"{plain(alpha_shown(res))}")
    labels = [label for _, label, _ in HEADLINE[res.task]]
    for name, who, n, *values in rows_of(res):
        click.echo(f"{plain(name)} vs {plain(who)}: n {plain(n)}; "
                   + "; ".join(f"{k} {plain(v)}" for k, v in zip(labels, values)))


def _human_command(rundir: Path, label_files: Sequence[Path], task: Optional[str], judges: Optional[list[str]],
                   out: Optional[Path], as_json: bool) -> None:
    from carryon_eval.suites.carryonbench.human.judges_vs_people import (HumanAgreementError, human_agreement,
                                                                        write_agreement)

    if not rundir.is_dir():
        raise AnalysisError(f"{rundir}: the first argument must be the run folder the labels are of")
    try:
        res = human_agreement(RunFolder(rundir), label_files, task, judges)
    except (HumanAgreementError, JudgeError) as exc:
        raise AnalysisError(str(exc)) from None
    if out is not None:
        path = write_agreement(out, res)
        if not as_json:
            click.echo(f"wrote {path}")
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
    else:
        _print_human(res)


def _with_task_option(params: list[click.Parameter]) -> list[click.Parameter]:
    """`agreement --task` (after --judges): the human-validation tasks of CarryOnBench's wing, read when the command
    line is (LateCommand)."""
    from carryon_eval.suites.carryonbench.human.labels import TASKS

    task = click.Option(["--task"], type=click.Choice(TASKS),
                        help="With human labels: which judgments they label [default: what the labels say].")
    return [*params[:2], task, *params[2:]]


@click.command("agreement", cls=LateCommand, late=_with_task_option)
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--judges", callback=_judge_names, metavar="A,B",
              help="Two judge models of the run folder A to compare [default: the two present]; with human "
                   "labels, the judges to compare with them [default: all].")
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
    from carryon_eval.suites.carryonbench.human.agreement import AgreementError

    try:
        _agreement(sources, judges, task, out, as_json)
    except AgreementError as exc:
        raise AnalysisError(str(exc)) from None


def _agreement(sources: tuple[Path, ...], judges: Optional[list[str]], task: Optional[str], out: Optional[Path],
               as_json: bool) -> None:
    from carryon_eval.suites.carryonbench.human.agreement import (agreement_lines, is_human_labels, judge_agreement,
                                                                  source_agreement)

    a, rest = sources[0], sources[1:]
    if rest and (task or out or len(rest) > 1 or any(is_human_labels(p) for p in rest)):
        _human_command(a, rest, task, judges, out, as_json)
        return
    if task or out:
        raise AnalysisError("--task and --out go with human labels: carryon-eval agreement RUNDIR LABELS...")
    b = rest[0] if rest else None
    if b is None:
        if not a.is_dir():
            raise AnalysisError(f"{a}: one argument must be a run folder judged by two judge models")
        res = judge_agreement(RunFolder(a), judges)
        names = (res["judges"][0], res["judges"][1])
    elif judges is not None:
        raise AnalysisError("--judges compares two judges of one run folder; give one RUNDIR with it")
    else:
        res = source_agreement(a, b)
        names = (str(a), str(b))
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
        return
    if not res["n_compared"]:
        raise AnalysisError(f"no (conversation_id, turn, item_id) is scored in both {names[0]} and {names[1]} "
                             f"({res['n_common']} shared keys, {res['n_unscored_excluded']} with an unscored side)")
    for line in agreement_lines(res, names):
        click.echo(line)
