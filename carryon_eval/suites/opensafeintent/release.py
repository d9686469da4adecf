"""An OpenSafeIntent release folder, loaded as it is: ``dataset.json`` and ``prompts/metrics/``.

A prompt-set is one underlying task in a benign, a dual-use and a malicious version plus 4 paraphrases of the
dual-use one: 7 prompts. Two row layouts load:

- the released (flat) layout: ``prompt_benign``, ``prompt_dual_use``, ``prompt_malicious``,
  ``prompt_dual_use_2`` .. ``prompt_dual_use_5`` beside ``harm_domain``, ``task_type``, ``underlying_task``;
- the nested layout the reference evaluation scripts read: ``generated_prompts.{benign_prompt, dual_use_prompt,
  malicious_prompt}`` and a ``dual_use_paraphrases`` list.

Rows carry no id: a set is its position, ``osi-000`` for the first. The prompts are named as the reference names
them in its scored files and failure records (``benign_prompt``, ``dual_use_prompt``, ``malicious_prompt``,
``dual_use_paraphrases[0]`` .. ``[3]``). The dataset and the judge prompt files are third-party text: they are read
from the folder the user names, hashed (sha256, recorded in run.json), never copied into this repository.

Bad input raises ``ReleaseError`` (a DatasetError: one line naming the file, the row and the field, exit 2).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from carryon_eval.suites.opensafeintent.errors import ReleaseError
from carryon_eval.suites.opensafeintent.prompts import template_problem

DATASET_FILE = "dataset.json"
PROMPT_DIR = Path("prompts") / "metrics"
PARAPHRASES = 4
MAIN = ("benign_prompt", "dual_use_prompt", "malicious_prompt")
PARAPHRASE_FIELD = "dual_use_paraphrases"
PROMPT_NAMES = MAIN + tuple(f"{PARAPHRASE_FIELD}[{i}]" for i in range(PARAPHRASES))
FLAT_FIELDS = {"benign_prompt": "prompt_benign", "dual_use_prompt": "prompt_dual_use",
               "malicious_prompt": "prompt_malicious",
               **{f"{PARAPHRASE_FIELD}[{i}]": f"prompt_dual_use_{i + 2}" for i in range(PARAPHRASES)}}
LABELS = ("harm_domain", "task_type")

# judge name -> (file, how the reference fills it); see prompts.py
JUDGE_FILES = {
    "helpfulness": "helpfulness.txt",
    "harmfulness": "harmfulness.txt",
    "assistance_level": "assistance_level_classification.txt",
    "intent_classification": "intent_classification.txt",
}


@dataclass(frozen=True)
class PromptSet:
    set_id: str                        # osi-000: the row's position
    row: int
    harm_domain: Optional[str]
    task_type: Optional[str]
    underlying_task: Optional[str]
    prompts: tuple[tuple[str, str], ...]   # (prompt name, exact text) in PROMPT_NAMES order

    def prompt(self, name: str) -> str:
        return dict(self.prompts)[name]


@dataclass(frozen=True)
class Release:
    folder: Path
    layout: str                        # flat | nested
    sets: tuple[PromptSet, ...]
    templates: dict[str, str]          # judge name -> prompt file text, byte-exact
    hashes: dict[str, str]             # relative path -> sha256 of dataset.json and each prompt file
    total_rows: int                    # rows in dataset.json (before --limit)

    @property
    def n_prompts(self) -> int:
        return sum(len(s.prompts) for s in self.sets)


def set_id(row: int) -> str:
    return f"osi-{row:03d}"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _text(path: Path, row: int, field: str, value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    got = "nothing" if value is None else "an empty string" if isinstance(value, str) else type(value).__name__
    raise ReleaseError(f"{path}: row {row}: field {field}: expected a non-empty string, got {got}")


def _label(path: Path, row: int, obj: dict[str, Any], field: str, required: bool) -> Optional[str]:
    value = obj.get(field)
    if value is None and not required:
        return None
    return _text(path, row, field, value)


def row_layout(row: dict[str, Any]) -> str:
    return "nested" if "generated_prompts" in row or PARAPHRASE_FIELD in row else "flat"


def _flat_prompts(path: Path, i: int, row: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((name, _text(path, i, FLAT_FIELDS[name], row.get(FLAT_FIELDS[name]))) for name in PROMPT_NAMES)


def _nested_prompts(path: Path, i: int, row: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    gen = row.get("generated_prompts")
    if not isinstance(gen, dict):
        raise ReleaseError(f"{path}: row {i}: field generated_prompts: expected an object")
    out = [(name, _text(path, i, f"generated_prompts.{name}", gen.get(name))) for name in MAIN]
    paras = row.get(PARAPHRASE_FIELD)
    if not isinstance(paras, list) or len(paras) != PARAPHRASES:
        got = f"{len(paras)} items" if isinstance(paras, list) else "no list"
        raise ReleaseError(f"{path}: row {i}: field {PARAPHRASE_FIELD}: expected a list of {PARAPHRASES} "
                           f"paraphrases, got {got}")
    out += [(f"{PARAPHRASE_FIELD}[{k}]", _text(path, i, f"{PARAPHRASE_FIELD}[{k}]", p)) for k, p in enumerate(paras)]
    return tuple(out)


def parse_rows(path: Path, rows: Any) -> tuple[str, list[PromptSet]]:
    """The prompt-sets of dataset.json's rows (both layouts; one layout per file)."""
    if not isinstance(rows, list):
        raise ReleaseError(f"{path}: expected a JSON list of prompt-set rows, got a {type(rows).__name__}")
    if not rows:
        raise ReleaseError(f"{path}: expected a JSON list of prompt-set rows, got an empty list")
    layout = None
    sets = []
    first_of: dict[tuple[Any, ...], int] = {}      # a prompt-set's prompts -> the row that first has them
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ReleaseError(f"{path}: row {i}: expected an object, got a {type(row).__name__}")
        this = row_layout(row)
        if layout is None:
            layout = this
        elif this != layout:
            raise ReleaseError(f"{path}: row {i}: {this} layout, but row 0 has the {layout} layout")
        prompts = _flat_prompts(path, i, row) if this == "flat" else _nested_prompts(path, i, row)
        if prompts in first_of:       # run and counted twice otherwise
            raise ReleaseError(f"{path}: row {i}: the same prompt-set as row {first_of[prompts]} (a duplicated row)")
        first_of[prompts] = i
        required = this == "flat"
        sets.append(PromptSet(set_id(i), i, _label(path, i, row, "harm_domain", required),
                              _label(path, i, row, "task_type", required),
                              _label(path, i, row, "underlying_task", False), prompts))
    assert layout is not None
    return layout, sets


def load_release(folder: str | Path, limit: Optional[int] = None) -> Release:
    """Load a release folder: the first ``limit`` sets (all without it), the judge templates (placeholders
    checked) and the sha256 of dataset.json and each prompt file."""
    folder = Path(folder)
    path = folder / DATASET_FILE
    if not path.is_file():
        raise ReleaseError(f"{path}: no such file (an OpenSafeIntent release folder holds dataset.json "
                           f"and {PROMPT_DIR}/)")
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"{path}: not valid JSON ({exc})") from None
    layout, sets = parse_rows(path, rows)
    hashes = {DATASET_FILE: sha256_file(path)}
    templates = {}
    for judge, name in JUDGE_FILES.items():
        p = folder / PROMPT_DIR / name
        if not p.is_file():
            raise ReleaseError(f"{p}: no such file (the {judge} judge's prompt of the release)")
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ReleaseError(f"{p}: not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}); the "
                               f"{judge} judge's prompt must be the release's file as published") from None
        why = template_problem(judge, text)
        if why:
            raise ReleaseError(f"{p}: the {judge} prompt has not its placeholders: {why}")
        templates[judge] = text
        hashes[(PROMPT_DIR / name).as_posix()] = sha256_file(p)
    if limit is not None:
        sets = sets[:limit]
    return Release(folder, layout, tuple(sets), templates, hashes, len(rows))


def release_hashes(folder: str | Path) -> dict[str, str]:
    """The sha256 of the files a run reads, as they are now (for a resume check)."""
    folder = Path(folder)
    out = {}
    for rel in [DATASET_FILE] + [(PROMPT_DIR / n).as_posix() for n in JUDGE_FILES.values()]:
        p = folder / rel
        out[rel] = sha256_file(p) if p.is_file() else "missing"
    return out


def changed_files(recorded: dict[str, str], folder: str | Path, extra: Optional[dict[str, str]] = None) -> list[str]:
    """The recorded files (and the prompt files) whose sha256 differs now; ``extra``: other hashes as they are
    now (e.g. a dataset's triplets)."""
    now = {**release_hashes(folder), **(extra or {})}
    keys = set(recorded) | {(PROMPT_DIR / n).as_posix() for n in JUDGE_FILES.values()}
    return [rel for rel in sorted(keys) if recorded.get(rel) != now.get(rel)]


def check_resume(recorded: dict[str, str], folder: str | Path, extra: Optional[dict[str, str]] = None) -> None:
    """Refuse (one line) a resume whose release files changed since the run started."""
    changed = changed_files(recorded, folder, extra)
    if changed:
        raise ReleaseError(f"{Path(folder)}: {', '.join(changed)} changed since this run started (sha256 differs "
                           f"from run.json); use a new --out folder or restore the files")


# ---------------------------------------------------------------- CarryOnBench's own triplets, same definitions
TRIPLET_NAMES = {("benign", 0): "benign_prompt", ("ambiguous", 0): "dual_use_prompt",
                 ("malicious", 0): "malicious_prompt",
                 **{("ambiguous", k): f"{PARAPHRASE_FIELD}[{k - 1}]" for k in range(1, PARAPHRASES + 1)}}


def sets_from_triplets(source: str, rows: list[dict[str, Any]]) -> list[PromptSet]:
    """A dataset's ``triplets`` config as prompt-sets of the same 7 prompts (benign, ambiguous = dual-use with its
    4 paraphrases, malicious), so that OpenSafeIntent's judges and metrics score CarryOnBench's triplets on one
    scale with the release. A set without all 7 prompts is refused (one line)."""
    by_set: dict[str, dict[str, str]] = {}
    meta: dict[str, tuple[Optional[str], Optional[str]]] = {}
    for r in rows:
        name = TRIPLET_NAMES.get((r["variant"], r["paraphrase"]))
        if name is not None:
            by_set.setdefault(r["set_id"], {})[name] = r["prompt"]
            meta.setdefault(r["set_id"], (r.get("domain"), r.get("category")))
    out = []
    for i, (sid, prompts) in enumerate(by_set.items()):
        missing = [n for n in PROMPT_NAMES if n not in prompts]
        if missing:
            raise ReleaseError(f"dataset {source}: triplets of set {sid}: no {', '.join(missing)} "
                               f"(OpenSafeIntent's definitions need all 7 prompts)")
        out.append(PromptSet(sid, i, meta[sid][0], meta[sid][1], None, tuple((n, prompts[n]) for n in PROMPT_NAMES)))
    return out


def with_triplets(release: Release, source: str, rows: list[dict[str, Any]], fingerprint: Optional[str]) -> Release:
    """The release's judges (its prompt files) on a dataset's own triplets instead of its dataset.json."""
    from dataclasses import replace
    sets = sets_from_triplets(source, rows)
    hashes = {k: v for k, v in release.hashes.items() if k != DATASET_FILE}
    hashes["triplets"] = fingerprint or "unknown"
    return replace(release, layout="carryonbench-triplets", sets=tuple(sets), hashes=hashes, total_rows=len(sets))
