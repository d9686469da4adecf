"""The reference's file layout, both ways.

Written (``carryon-eval export RUNDIR --format opensafeintent --out DIR``), in the nested row layout its scripts
read, for a target model ``M`` (``/`` and other odd characters become ``__``, as the reference names local models):

- ``M.json``: rows with ``generated_prompts``, ``dual_use_paraphrases`` and ``model_responses``;
- ``M_scored.json``: the same plus ``response_scores_helpfulness``, ``response_scores_harmfulness`` (a failed
  score is stored as 0, as the reference stores it) and ``response_score_failures`` when there are any;
- ``assistance_level/M_scored.json``: the scored rows plus ``dual_use_assistance_level`` (the judge's JSON object,
  or ``{"a_level": null, "assistance_level_failures": [...]}``);
- ``intent_classification/M_scored_intent_classification.json``: the scored rows whose dual-use harm is above 0,
  plus ``dual_use_intent_classification`` ({strategy, raw_response, error}) and, on ERROR,
  ``intent_classification_failures``.

Read: the same files (the authors' own included) back into ScoredSets for metrics.summarize.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval.run.folder import write_json_atomic
from carryon_eval.suites.opensafeintent.metrics import ScoredSet, dual_use_harm_above_0
from carryon_eval.suites.opensafeintent.readings import A_LEVELS, ERROR, failure
from carryon_eval.suites.opensafeintent.release import (MAIN, PARAPHRASE_FIELD, PARAPHRASES, PROMPT_NAMES, PromptSet,
                                                 ReleaseError, set_id)

HELP = "response_scores_helpfulness"
HARM = "response_scores_harmfulness"
FAILURES = "response_score_failures"
ASSIST = "dual_use_assistance_level"
ASSIST_FAILURES = "assistance_level_failures"
INTENT = "dual_use_intent_classification"
INTENT_FAILURES = "intent_classification_failures"


def safe_name(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", model).strip("._-") or "model"


@dataclass(frozen=True)
class SetExport:
    """Everything the reference files say of one set."""
    prompt_set: PromptSet
    responses: dict[str, str]                       # prompt name -> raw reply
    scores: ScoredSet
    failures: tuple[dict[str, str], ...] = ()       # helpfulness / harmfulness failure records
    assistance: Optional[dict[str, Any]] = None     # the judge's JSON object (a_level valid) or None
    assistance_error: Optional[str] = None
    probe_raw: Optional[str] = None
    probe_error: Optional[str] = None


def _by_name(values: dict[str, Any], fill: Any) -> dict[str, Any]:
    """Prompt-name keyed values in the reference's shape: three keys and a paraphrase list."""
    out = {n: values.get(n, fill) for n in MAIN}
    out[PARAPHRASE_FIELD] = [values.get(f"{PARAPHRASE_FIELD}[{i}]", fill) for i in range(PARAPHRASES)]
    return out


def _score(v: Optional[float]) -> Any:
    return 0 if v is None else (int(v) if float(v).is_integer() else v)


def response_row(e: SetExport) -> dict[str, Any]:
    ps = e.prompt_set
    row: dict[str, Any] = {"harm_domain": ps.harm_domain, "task_type": ps.task_type,
                           "underlying_task": ps.underlying_task}
    prompts = dict(ps.prompts)
    row["generated_prompts"] = {n: prompts[n] for n in MAIN}
    row[PARAPHRASE_FIELD] = [prompts[f"{PARAPHRASE_FIELD}[{i}]"] for i in range(PARAPHRASES)]
    row["model_responses"] = _by_name(e.responses, "")
    return row


def scored_row(e: SetExport) -> dict[str, Any]:
    row = response_row(e)
    row[HELP] = _by_name({n: _score(v) for n, v in e.scores.helpfulness.items()}, 0)
    row[HARM] = _by_name({n: _score(v) for n, v in e.scores.harmfulness.items()}, 0)
    if e.failures:
        row[FAILURES] = list(e.failures)
    return row


def assistance_row(e: SetExport) -> dict[str, Any]:
    row = scored_row(e)
    if e.assistance is not None and e.assistance.get("a_level") in A_LEVELS:
        row[ASSIST] = dict(e.assistance)
    else:
        row[ASSIST] = {"a_level": None, ASSIST_FAILURES: [
            failure("dual_use_prompt", "assistance_level", e.assistance_error or "no assistance-level answer")]}
    return row


def intent_row(e: SetExport) -> dict[str, Any]:
    row = scored_row(e)
    strategy = e.scores.probe or ERROR
    record: dict[str, Any] = {"strategy": strategy, "raw_response": e.probe_raw or ""}
    if strategy == ERROR:
        record["error"] = e.probe_error or "Model response did not contain a valid strategy JSON object."
        row[INTENT_FAILURES] = [failure("dual_use_prompt", "intent_classification", record["error"])]
    row[INTENT] = record
    return row


def reference_paths(out: Path, model: str) -> dict[str, Path]:
    m = safe_name(model)
    return {"responses": out / f"{m}.json", "scored": out / f"{m}_scored.json",
            "assistance_level": out / "assistance_level" / f"{m}_scored.json",
            "intent_classification": out / "intent_classification" / f"{m}_scored_intent_classification.json"}


def write_reference(out: Path, model: str, sets: Sequence[SetExport]) -> dict[str, Path]:
    """Write the four reference files (each atomically); returns their paths."""
    paths = reference_paths(Path(out), model)
    write_json_atomic(paths["responses"], [response_row(e) for e in sets])
    write_json_atomic(paths["scored"], [scored_row(e) for e in sets])
    write_json_atomic(paths["assistance_level"], [assistance_row(e) for e in sets])
    write_json_atomic(paths["intent_classification"],
                      [intent_row(e) for e in sets if dual_use_harm_above_0(e.scores)])
    return paths


# ---------------------------------------------------------------- reading the reference's files
def _load_list(path: Path) -> list[Any]:
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(rows, list):
        raise ReleaseError(f"{path}: expected a JSON list of datapoints, got a {type(rows).__name__}")
    return rows


def _failed_names(path: Path, i: int, row: dict[str, Any]) -> list[dict[str, Any]]:
    fails = row.get(FAILURES) or []
    if not isinstance(fails, list):
        raise ReleaseError(f"{path}: row {i}: field {FAILURES}: expected a list")
    return [f for f in fails if isinstance(f, dict) and isinstance(f.get("prompt"), str) and f["prompt"]]


def _hits(fails: list[dict[str, Any]], name: str, metric: str) -> bool:
    for f in fails:
        if f.get("metric") not in (metric, "all"):
            continue
        p = f["prompt"]
        if p in ("datapoint", name) or (name.startswith(PARAPHRASE_FIELD) and p == PARAPHRASE_FIELD):
            return True
    return False


def _scores(path: Path, i: int, row: dict[str, Any], field_name: str, metric: str,
            fails: list[dict[str, Any]]) -> dict[str, Optional[float]]:
    scores = row.get(field_name)
    if not isinstance(scores, dict):
        raise ReleaseError(f"{path}: row {i}: field {field_name}: expected an object (a scored file)")
    paras = scores.get(PARAPHRASE_FIELD)
    out: dict[str, Optional[float]] = {}
    for name in PROMPT_NAMES:
        if name in MAIN:
            value, where = scores.get(name), f"{field_name}.{name}"
        else:
            k = int(name.rsplit("[", 1)[1].rstrip("]"))
            value = paras[k] if isinstance(paras, list) and k < len(paras) else None
            where = f"{field_name}.{name}"
        if _hits(fails, name, metric):
            out[name] = None
            continue
        if value is None and name not in MAIN:
            out[name] = None           # a file without paraphrase scores: those prompts are not counted
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ReleaseError(f"{path}: row {i}: field {where}: expected a number")
        out[name] = float(value)
    return out


def _level(row: Any) -> Optional[str]:
    c = row.get(ASSIST) if isinstance(row, dict) else None
    level = c.get("a_level") if isinstance(c, dict) else None
    level = level.strip().upper() if isinstance(level, str) else None
    return level if level in A_LEVELS else None


def read_reference(scored: str | Path, assistance: Optional[str | Path] = None,
                   intent: Optional[str | Path] = None) -> list[ScoredSet]:
    """ScoredSets from a reference scored file and, optionally, its assistance-level and intent files."""
    scored = Path(scored)
    rows = _load_list(scored)
    sets = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ReleaseError(f"{scored}: row {i}: expected an object, got a {type(row).__name__}")
        fails = _failed_names(scored, i, row)
        sets.append(ScoredSet(set_id(i), _scores(scored, i, row, HELP, "helpfulness", fails),
                              _scores(scored, i, row, HARM, "harmfulness", fails),
                              frozenset(f["prompt"] for f in fails), row.get("harm_domain"), row.get("task_type")))
    if assistance is not None:
        arows = _load_list(Path(assistance))
        if len(arows) != len(sets):
            raise ReleaseError(f"{assistance}: {len(arows)} rows, but {scored} has {len(sets)}")
        sets = [_replace(s, assistance_level=_level(r)) for s, r in zip(sets, arows)]
    if intent is not None:
        irows = _load_list(Path(intent))
        probed = [k for k, s in enumerate(sets) if dual_use_harm_above_0(s)]
        if len(irows) != len(probed):
            raise ReleaseError(f"{intent}: {len(irows)} rows, but {scored} has {len(probed)} dual-use replies "
                               f"with harm above 0")
        for k, r in zip(probed, irows):
            c = r.get(INTENT) if isinstance(r, dict) else None
            strategy = c.get("strategy") if isinstance(c, dict) else None
            if not isinstance(strategy, str):
                raise ReleaseError(f"{intent}: row {probed.index(k)}: field {INTENT}.strategy: expected a string")
            want = (rows[k].get("generated_prompts") or {}).get("dual_use_prompt")
            got = (r.get("generated_prompts") or {}).get("dual_use_prompt")
            if want is not None and got is not None and want != got:
                raise ReleaseError(f"{intent}: row {probed.index(k)}: its dual-use prompt is not that of "
                                   f"{scored} row {k}")
            sets[k] = _replace(sets[k], probe=strategy)
    return sets


def _replace(s: ScoredSet, **kw: Any) -> ScoredSet:
    from dataclasses import replace
    return replace(s, **kw)
