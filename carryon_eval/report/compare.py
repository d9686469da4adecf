"""`carryon-eval compare RUNDIR... [--out DIR]`: several models side by side.

- a refusal, when a suite's columns cannot hold the runs side by side (its SuiteReport's ``incomparable``);
- the table of all runs: the model, each suite's columns (its SuiteReport's ``table``, from each run's
  results.json; none when no run has its numbers), the run's status;
- each suite's part (its SuiteReport's ``compare``, from the runs' results and conversation rows; where it sits in
  compare.json is its record's business, carryon_eval.report.comparison), each given as blocks by its
  ``compare_blocks`` and rendered here;
- the notes: each run's status, then the suites' notes, then whether the runs' users were simulated by different
  models (run.json's user role: compare.json "simulators") and whether they used different datasets;
- what a suite could not compute for want of an optional package (its part's ``missing``: compare.json "missing",
  a section of table.md and of the leaderboard page), never a reason to fail;
- with ``paper_rows``: the rows the suites' papers report (SuiteReport.reported), in a table of their own
  (compare.json "reported"), never among the runs.
With --out, plots/ holds the suites' figures of several runs (``SuiteReport.plots``); a plot whose data is all
null is not drawn and compare.json "plots" says why.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval.run.paths import local_path
from carryon_eval.run.results import Results
from carryon_eval.report.comparison import Comparison, part_lines
from carryon_eval.report.blocks import Block, Heading, Notes, Table, number_text, shown, to_markdown
from carryon_eval.run.folder import RESULTS_FILE, SCORES_FILE, RunError, RunFolder
from carryon_eval.suite import CompareInputs, suites


class CompareError(Exception):
    """Run folders that cannot be compared; one line (the command line's error, exit 2)."""


#: What `compare --out DIR` writes into DIR (a sweep's folder too: no target may be named one of them).
OUT_FILES = ("compare.json", "table.md", "plots", "leaderboard.html", "leaderboard.jsonl")


def load_run(run: RunFolder) -> tuple[Results, list[dict[str, Any]]]:
    results_path, scores_path, rundir = run.results_file, run.scores_file, run.path
    if not rundir.is_dir():
        raise CompareError(f"{rundir}: no such run folder (compare takes run folders, each written by carryon-eval)")
    if not run.run_file.is_file():          # not a run at all: `report` on it cannot help
        what = ("a dataset folder (it has queries.jsonl), not a run folder" if (rundir / "queries.jsonl").is_file()
                else f"not a run folder (it has no {run.run_file.name})")
        raise CompareError(f"{rundir} is {what}; compare takes the run folders carryon-eval writes (--out), "
                           "e.g. carryon-runs/MODEL__DATASET")
    if not results_path.is_file() or not scores_path.is_file():
        raise CompareError(f"{rundir} has no {RESULTS_FILE}/{SCORES_FILE}; run `carryon-eval report {rundir}` first")
    texts = {}
    for path in (results_path, scores_path):
        try:
            texts[path] = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CompareError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        results = Results.from_json(json.loads(texts[results_path]))
        scores = [json.loads(line) for line in texts[scores_path].splitlines() if line.strip()]
    except (ValueError, TypeError, AttributeError) as exc:
        raise CompareError(f"{rundir}: unreadable report files ({exc}); rerun `carryon-eval report {rundir}`") from None
    return results, scores


def _labels(runs: Sequence[tuple[Path, Results]]) -> list[str]:
    """Model names, made unique with the run folder name where two runs share one."""
    names = [r.model or "?" for _, r in runs]
    return [f"{n} ({p.name})" if names.count(n) > 1 else n for n, (p, _) in zip(names, runs)]


def headline_table(results: Sequence[Results]) -> tuple[list[str], list[list[str]]]:
    """compare's table: the model, then each suite's columns (its SuiteReport's ``table``: header and one row per
    run, both starting with the model), rows in the first part's order (a suite may rank them)."""
    parts = [part for s in suites() if s.report is not None and s.report.table is not None
             for part in [s.report.table(results)] if part is not None]
    if not parts:
        return ["Model"], [[r.model or "?"] for r in results]
    if len(parts) == 1:
        return parts[0]
    header = ["Model", *(h for head, _ in parts for h in head[1:])]
    cells = [{row[0]: row[1:] for row in rows} for _, rows in parts]
    models = list(dict.fromkeys(m for by_model in cells for m in by_model))
    return header, [[m, *(c for (head, _), by_model in zip(parts, cells)
                          for c in by_model.get(m, ["n/a"] * (len(head) - 1)))] for m in models]


def compare(rundirs: Sequence[Path], paper_rows: bool = False) -> Comparison:
    """compare.json's record of the runs (with each run's results and conversation rows, for the figures and the
    leaderboard). Nothing here needs more than the core install; a part a suite could not compute for want of a
    package (``missing`` in its part: one line each, saying what it would add and how to add it) is gathered under
    the record's ``missing``, which table.md and the leaderboard page show."""
    twice = _given_twice(rundirs)
    if twice:
        raise CompareError(f"{twice[1]} is {twice[0]} again: compare each run once (a run is not a model of its own "
                           "twice)")
    loaded = [(Path(d), *load_run(RunFolder(d))) for d in rundirs]
    for s in suites():                # a suite whose columns these runs cannot share refuses them (one line)
        why = s.report.incomparable([p for p, _, _ in loaded], [r for _, r, _ in loaded]) \
            if s.report is not None and s.report.incomparable is not None else None
        if why:
            raise CompareError(why)
    labels = _labels([(p, r) for p, r, _ in loaded])
    results = [dataclasses.replace(r, model=label) for (_, r, _), label in zip(loaded, labels)]
    header, table = headline_table(results)
    runs = CompareInputs(labels, results, [scores for _, _, scores in loaded])
    parts = {s.report.section: s.report.compare(runs) if any(r.section(s.report.section) is not None for r in results)
             else None for s in suites() if s.report is not None and s.report.compare is not None}
    cmp = Comparison(models=labels, runs=[str(p) for p, _, _ in loaded],
                     table=[dict(zip([*header, "Status"], [*row, *["n/a"] * (len(header) - len(row)),
                                                           " ".join(r.status()) or "full"]))
                            for r, row in zip(results, table)],
                     parts=parts, results=results, scores=[scores for _, _, scores in loaded])
    cmp.notes = [f"{label}: {line}" for label, r in zip(labels, results) for line in r.status_lines()] \
        + part_lines(cmp.lifted, "notes")   # the runs' status lines, then the top-level part's notes
    cmp.simulators = simulators([p for p, _, _ in loaded])
    if len(set(cmp.simulators)) > 1:
        cmp.notes.append("WARNING: the runs' users were simulated by different models ("
                         + ", ".join(f"{label}: {sim}" for label, sim in zip(labels, cmp.simulators))
                         + "); their numbers are not comparable.")
    if len({_dataset_pin(p, r) for (p, _, _), r in zip(loaded, results)}) > 1:
        cmp.notes.append("The runs used different datasets.")
    cmp.missing = list(dict.fromkeys(line for part in parts.values() for line in part_lines(part, "missing")))
    if paper_rows:
        cmp.reported = reported_table()
    return cmp


def _given_twice(rundirs: Sequence[Path]) -> Optional[tuple[Path, Path]]:
    """The first run folder given twice (the same folder however it is spelled), with its first spelling."""
    seen: dict[str, Path] = {}
    for d in rundirs:
        key = os.path.realpath(d)
        if key in seen:
            return seen[key], Path(d)
        seen[key] = Path(d)
    return None


def _dataset_pin(folder: Path, results: Results) -> str:
    """What pins a run's dataset rows: their content hashes where run.json recorded them (a folder moved or
    copied is the same dataset), else its source (a folder's path as this machine reads it) and revision."""
    try:
        recorded = RunFolder(folder).read_meta().dataset
    except (RunError, ValueError, TypeError):
        recorded = None
    if recorded is not None and recorded.content_sha256:
        return json.dumps(recorded.content_sha256, sort_keys=True)
    return json.dumps([local_path(results.dataset.source, folder), results.dataset.revision])


def pairs_blocks(pairs: dict[str, list[dict[str, Any]]], method: dict[str, Any]) -> list[Block]:
    """compare.json's pairs as a table: per column and group, how many pairs differ after adjustment, and which."""
    rows = []
    for key, diffs in pairs.items():
        for group in dict.fromkeys(d["group"] for d in diffs):
            mine = [d for d in diffs if d["group"] == group]
            hit = [d for d in mine if d["differs"]]
            which = "; ".join(f"{d['a']} {'>' if d['value'] > 0 else '<'} {d['b']} "
                              f"({number_text(shown(d['value'], 2, signed=True))})" for d in hit)
            rows.append([key, group, str(len(mine)), str(len(hit)), which or "none"])
    return [Heading(f"Pairwise differences that stand after adjustment ({method.get('method', 'n/a')})"),
            Table(["Column", "Group", "Pairs", "Differ", "Which"], rows)]


def reported_table() -> dict[str, Any]:
    """The rows the suites' papers report (SuiteReport.reported) in compare's table, apart from the runs, with
    what they stand on."""
    from carryon_eval.report.leaderboard_page import reported_entries

    entries = reported_entries()
    header, rows = headline_table([e.results for e in entries])
    notes = list(dict.fromkeys(n for e in entries for n in e.results.notes))
    return {"table": [dict(zip(header, row)) for row in rows], "notes": notes}


def simulators(rundirs: Sequence[Path]) -> list[str]:
    """The user simulator model of each run (run.json's user role; "unknown" without one, "embedded" on the
    embedded model)."""
    names = []
    for d in rundirs:
        run = RunFolder(d)
        try:
            user = run.read_meta().role("user") if run.exists() else None
        except (RunError, ValueError, TypeError, KeyError):
            user = None
        names.append("unknown" if user is None or not user.model else "embedded" if user.local else user.model)
    return names


def render_markdown(cmp: Comparison) -> str:
    """compare's table.md: the runs' table, each suite's part, the pairs that differ, the notes, what is not
    computed here and the paper's reported rows."""
    header = list(cmp.table[0]) if cmp.table else [*headline_table([])[0], "Status"]
    parts = [to_markdown([Heading("CarryOnBench comparison", 1), _table(header, cmp.table)])]
    for s in suites():
        part = cmp.parts.get(s.report.section) if s.report is not None else None
        if part is not None and s.report.compare_blocks is not None:
            parts.append(to_markdown(s.report.compare_blocks(part)))
    tail: list[Block] = []
    if cmp.family.get("pairs"):
        tail += pairs_blocks(cmp.family["pairs"], cmp.family.get("pairs_method") or {})
    if cmp.notes:
        tail.append(Notes(cmp.notes))
    if cmp.missing:
        tail += [Heading("Not computed here"), Notes(cmp.missing)]
    reported = cmp.reported
    if reported and reported["table"]:
        tail += [Heading("Reported in the paper (not measured here; not ranked with the runs above)"),
                 _table(list(reported["table"][0]), reported["table"]), Notes(reported["notes"])]
    return "\n".join(p for p in [*parts, to_markdown(tail)] if p)


def _table(header: list[str], rows: Sequence[dict[str, Any]]) -> Table:
    """A table of compare.json's rows (their values as they are written there)."""
    return Table(header, [[str(v) for v in r.values()] for r in rows])


def compare_plots(results: Sequence[Results]) -> tuple[dict[str, bytes], dict[str, str]]:
    """The figures of several runs of the suites some run has a section of: ({name: PNG bytes}, {name: skip
    reason}); raises PlotsUnavailable without matplotlib."""
    from carryon_eval.report.plots import draw_all

    return draw_all({name: draw for s in suites() if s.report is not None and s.report.plots is not None
                     and any(r.section(s.report.section) is not None for r in results)
                     for name, draw in s.report.plots.compare.items()}, results)
