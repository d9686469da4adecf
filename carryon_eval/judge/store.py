"""The judgment files of a run folder, and which judge a reader looks at.

    RUNDIR/<scorer>_judgments.jsonl  one file per scorer (judgment_file), records of every judge model
    RUNDIR/judge.json                records.JudgeSummary: every judge's latest pass, the last one on top

Records are keyed per (scorer, judge model): judging a run with a second judge model adds its records
beside the first one's. A reader picks one judge:

    run = RunFolder(rundir)                       # once per command: its judgments() view parses each file once
    name = select_judge(run)                      # the run's own judge (run.json), or the only one present
    records = load_judge(run, judgment_file("safety"), judge=name)   # that judge's records only, as its scorer's
                                                                     # record type (Judgments.records)

An unknown judge name is a JudgeError naming the judges present. A run whose scorers have judges of their own
(run.json's roles ``<name>_judge``, carryon_eval.suite.JudgeRole: Ben-Util by one model, safety by another) is read
scorer by scorer: each file's records of the judge run.json names for its scorer (``select_judge(run,
scorer=...)``; ``load_judge`` without a judge does so).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from carryon_eval.run.records import JudgePass, JudgeSummary
from carryon_eval.run.folder import (jsonl_writer, JUDGE_META_FILE, JUDGMENT_SUFFIX, RunError,  # noqa: F401
                                     RunFileError, RunFolder, judgment_file, read_jsonl, read_records,
                                     write_json_atomic)

class JudgeError(Exception):
    """The judge phase cannot start, or a reader asked for a judge that did not judge the run."""


# ---------------------------------------------------------------- which judge
def judges_present(run: RunFolder) -> list[str]:
    """Judge models with records in the run folder, in order of first appearance (found without reading the
    files: ``file_judges``)."""
    return list(dict.fromkeys(judge for name in run.judgments().files() for judge in file_judges(run, name)))


def file_judges(run: RunFolder, name: str) -> list[str]:
    """The judge models with records in one judgment file: as judge.json records the file when it has not changed
    since, else as ``Judgments.judges`` finds them (without parsing it)."""
    summary = read_summary(run)
    return run.judgments().judges(name, summary.files.get(name) if summary is not None else None)


def run_judge_model(run: RunFolder, scorer: Optional[str] = None) -> Optional[str]:
    """The judge model named in run.json (None without a readable one); with ``scorer``: its judge role's own
    (roles.<name>_judge) when the run has one, else the run's judge."""
    try:
        meta = run.read_meta()
    except (RunError, KeyError):
        return None
    if scorer is not None:
        from carryon_eval.suite import judge_role_of

        role = judge_role_of(scorer)
        if role is not None and role.role in meta.roles:
            return meta.role(role.role).model or None
    return meta.role("judge").model or None


def default_judge(run: RunFolder, scorer: str) -> Optional[str]:
    """The judge a reader uses for ``scorer`` when none is named: the scorer's own where run.json gives it one
    (roles.<name>_judge), else ``select_judge``'s choice for the whole run."""
    return run_judge_model(run, scorer) if has_judge_roles(run) else select_judge(run)


def has_judge_roles(run: RunFolder) -> bool:
    """Whether run.json gives some scorers a judge of their own (a role ``<name>_judge``)."""
    try:
        return any(name.endswith("_judge") for name in run.read_meta().roles)
    except (RunError, KeyError):
        return False


def run_judges(run: RunFolder) -> dict[str, str]:
    """{scorer: its judge model} of the judgment files present, as run.json names them (select_judge's default)."""
    view = run.judgments()
    out = {}
    for name in view.files():
        scorer = name[:-len(JUDGMENT_SUFFIX)] if name.endswith(JUDGMENT_SUFFIX) else name
        model = select_judge(run, scorer=scorer) if has_judge_roles(run) else select_judge(run)
        if model is not None:
            out[scorer] = model
    return out


def select_judge(run: RunFolder, judge: Optional[str] = None, scorer: Optional[str] = None) -> Optional[str]:
    """The judge whose records a reader uses: ``judge`` if it judged the run; by default the run's own
    judge (run.json) if present, else the only judge present. None when nothing is judged yet. ``scorer``: of
    that scorer's records (its judgment file's judges, and its own judge where run.json names one)."""
    present = judges_present(run)
    if judge is not None:
        if judge not in present:
            listed = ", ".join(present) if present else "none (run the judge phase first)"
            raise JudgeError(f"judge {judge!r} has no judgments in {run.path}; judges present: {listed}")
        return judge
    if scorer is not None:
        return _scorer_judge(run, scorer)
    if len(present) <= 1:
        return present[0] if present else None
    own = run_judge_model(run)
    if own in present:
        return own
    raise JudgeError(f"{run.path} was judged by {', '.join(present)}; pick one with --judge NAME")


def _scorer_judge(run: RunFolder, scorer: str) -> Optional[str]:
    view, name = run.judgments(), judgment_file(scorer)
    present = file_judges(run, name) if name in view.files() else []     # found without parsing the file
    own = run_judge_model(run, scorer)
    if own in present or len(present) <= 1:
        return own if own in present else (present[0] if present else None)
    raise JudgeError(f"{run.path}: {name} holds the judgments of {', '.join(present)}; pick one with --judge NAME")


# ---------------------------------------------------------------- reading records
def _load(path: Path, read: Callable[[dict[str, Any]], Any], judge: Optional[str],
          on_bad: Optional[Callable[[RunFileError], None]] = None) -> list[Any]:
    return [read(row) for row in read_jsonl(path, on_bad=on_bad) if judge is None or row.get("judge_model") == judge]


def _file_judge(run: RunFolder, name: str, judge: Optional[str]) -> Optional[str]:
    """The judge whose records of one file a reader takes: ``judge``, or by default ``select_judge``'s choice."""
    if judge is not None:
        return judge
    return select_judge(run, scorer=name[:-len(JUDGMENT_SUFFIX)]) if has_judge_roles(run) else select_judge(run)


def load_judge(run: RunFolder, name: str, judge: Optional[str] = None) -> list[Any]:
    """One judge's records of one file, as the record type registered for it (through the run's one judgments view):
    ``judge``'s, or by default ``select_judge``'s choice. A named judge is checked against the judges present only
    when it has no records here."""
    judge = _file_judge(run, name, judge)
    records = run.judgments().records(name, judge)
    if not records and judge is not None:
        select_judge(run, judge)             # raises for a judge that judged nothing in the run
    return records


def judge_records(run: RunFolder, name: str, judge: Optional[str] = None) -> Iterator[Any]:
    """``load_judge``'s records, one at a time, as the file's registered record type: the file is streamed and
    nothing is held, for a reader that folds them into something compact (a raw answer stored once stays named by
    its ``answer``)."""
    judge = _file_judge(run, name, judge)
    found = False
    for record in read_records(run.path / name):
        if judge is None or record.judge_model == judge:
            found = True
            yield record
    if not found and judge is not None:
        select_judge(run, judge)             # raises for a judge that judged nothing in the run


def load_all(path: Path, read: Callable[[dict[str, Any]], Any],
             on_bad: Optional[Callable[[RunFileError], None]] = None) -> list[Any]:
    """Every record of a judgment file, of every judge (a damaged line raises RunFileError, or with
    ``on_bad`` is handed to it and left out: the judge phase judges it again). The judge phase's resume
    reads this way; the readers go through ``RunFolder.judgments()``."""
    return _load(path, read, None, on_bad)


# ---------------------------------------------------------------- judge.json
def _parse_summary(path: Path) -> JudgeSummary:
    try:
        return JudgeSummary.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RunError(f"{path}: unreadable ({type(exc).__name__}); restore it, or delete it and run "
                       f"`carryon-eval judge {path.parent}` to write it again") from None


def read_summary(run: RunFolder) -> Optional[JudgeSummary]:
    """judge.json as a JudgeSummary; None when absent. A file there but unreadable is a RunError (one line):
    which judge the numbers use, and whether it finished, are read from it."""
    return run.judgments().meta(_parse_summary)


def judge_pass(run: RunFolder, judge: Optional[str]) -> Optional[JudgePass]:
    """The latest pass of one judge model over the run, from judge.json."""
    summary = read_summary(run)
    return summary.judges.get(judge) if summary is not None and judge is not None else None


def record_pass(run: RunFolder, judged: JudgePass) -> JudgeSummary:
    """Add (or replace) one judge's pass in judge.json, atomically; the other judges' passes stay."""
    old = read_summary(run)
    files = run.judgments().known()              # the files as this pass wrote them: what is there, and whose
    summary = old.with_pass(judged, files) if old is not None else JudgeSummary({judged.judge_model: judged},
                                                                                 judged.judge_model, files=files)
    write_json_atomic(run.judge_file, summary.to_json())
    return summary
