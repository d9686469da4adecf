"""The OpenSafeIntent source (Uppaal et al., 2026; Apache-2.0): one query per prompt-set, its dual-use prompt.

The release's ``dataset.json`` is a JSON list of flat objects with 14 string fields (see FIELDS); a set has no
id, only its position. A query takes:
    query              prompt_dual_use
    domain, category   harm_domain, task_type
    benign_context     dual_use_prompt_plausible_benign_use   (the authors' third-person description)
    malicious_context  dual_use_prompt_meaningful_misuse_risk
and the set's own benign, dual-use (with its 4 paraphrases) and malicious prompts are its triplet, so the
builder's paraphrase stage does not run for this source. Without the LLM stages the two descriptions are the
queries' ``benign_intent`` and ``malicious_intent`` verbatim; with them the intent writer turns each into the
user's voice (prompts ``intent_writer_described`` and ``malicious_intent_described``). Query ids come from the
dual-use prompt's text (``query_id_for``), queries keep the release's order, and nothing is dropped.

Every problem raises SourceError with one line naming the file, the row and the field. The release's text is
read from the folder the user names; nothing of it is in this repository.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from .record import CardText, Source, SourceError, SourceQuery, check_unique_ids, query_id_for

DATASET_FILE = "dataset.json"
PARAPHRASE_FIELDS = tuple(f"prompt_dual_use_{k}" for k in range(2, 6))
FIELDS = ("harm_domain", "task_type", "underlying_task", "prompt_benign", "prompt_dual_use", "prompt_malicious",
          *PARAPHRASE_FIELDS, "benign_prompt_plausible_benign_use", "dual_use_prompt_plausible_benign_use",
          "dual_use_prompt_meaningful_misuse_risk", "malicious_prompt_meaningful_misuse_risk")
BENIGN_USE = "dual_use_prompt_plausible_benign_use"
MISUSE_RISK = "dual_use_prompt_meaningful_misuse_risk"


def data_file(path: Path) -> Path:
    """--source names the release folder or its dataset.json."""
    path = Path(path)
    return path / DATASET_FILE if path.is_dir() else path


def _looks_like(path: Path) -> bool:
    """A release folder (holding dataset.json), a file named dataset.json, or a JSON list whose first row has
    the release's fields. A folder without dataset.json is not one (a CASE-Bench data folder is not read as a
    release: CASE-Bench's reader names what the folder lacks)."""
    file = data_file(path)
    if not file.is_file():
        return False
    if file.name == DATASET_FILE:
        return True
    head = file.open("rb").read(8192).decode("utf-8", "replace")
    return head.lstrip().startswith("[") and f'"{BENIGN_USE}"' in head


def _text(path: Path, i: int, row: dict[str, Any], name: str) -> str:
    if name not in row:
        raise SourceError(f"{path}: row {i}: field '{name}' is missing; expected a non-empty string")
    value = row[name]
    if not isinstance(value, str) or not value.strip():
        got = "an empty string" if isinstance(value, str) else type(value).__name__
        raise SourceError(f"{path}: row {i}: field '{name}': expected a non-empty string, got {got}")
    return value.strip()


def _query(path: Path, i: int, row: Any) -> SourceQuery:
    if not isinstance(row, dict):
        raise SourceError(f"{path}: row {i}: expected a JSON object with OpenSafeIntent's {len(FIELDS)} fields, "
                          f"got {type(row).__name__}")
    f = {name: _text(path, i, row, name) for name in FIELDS}
    query = f["prompt_dual_use"]
    prompt_set = (("benign", 0, f["prompt_benign"]), ("ambiguous", 0, query),
                  *(("ambiguous", k, f[name]) for k, name in enumerate(PARAPHRASE_FIELDS, 1)),
                  ("malicious", 0, f["prompt_malicious"]))
    return SourceQuery(
        query_id=query_id_for(query), query=query, category=f["task_type"], domain=f["harm_domain"],
        benign_context=f[BENIGN_USE], malicious_context=f[MISUSE_RISK], source_rows=(i,),
        given_intents=(f[BENIGN_USE], f[MISUSE_RISK]), prompt_set=prompt_set,
        extra=(("underlying_task", f["underlying_task"]), ("set_row", i)))


def load_release(path: str | Path) -> list[SourceQuery]:
    """Read and validate dataset.json (or the folder holding it); every set, in the release's order."""
    path = data_file(Path(path))
    if not path.is_file():
        raise SourceError(f"{path}: file not found (an OpenSafeIntent release folder holds {DATASET_FILE})")
    try:
        rows = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: not valid JSON ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise SourceError(f"{path}: JSON nested too deeply to be OpenSafeIntent rows") from None
    if not isinstance(rows, list) or not rows:
        raise SourceError(f"{path}: expected a non-empty JSON list of prompt-set objects, got "
                          f"{type(rows).__name__ if rows else 'an empty list'}")
    queries = [_query(path, i, row) for i, row in enumerate(rows)]
    check_unique_ids(path, queries)
    return queries


def query_row(q: SourceQuery, benign_intent: str, malicious_intent: str) -> dict[str, Any]:
    return {"query_id": q.query_id, "category": q.category, "domain": q.domain, "query": q.query,
            "benign_intent": benign_intent, "malicious_intent": malicious_intent,
            "benign_context": q.benign_context, "malicious_context": q.malicious_context,
            "safe_rate": None, **dict(q.extra)}


QUERY_SCHEMA = pa.schema([
    ("query_id", pa.string()), ("category", pa.string()), ("domain", pa.string()), ("query", pa.string()),
    ("benign_intent", pa.string()), ("malicious_intent", pa.string()), ("benign_context", pa.string()),
    ("malicious_context", pa.string()), ("safe_rate", pa.float64()), ("underlying_task", pa.string()),
    ("set_row", pa.int64()),
])

CARD = CardText(
    template="sources/opensafeintent_card.md",
    license_file="sources/opensafeintent_license.md",
    header={
        "pretty_name": "CarryOnBench (OpenSafeIntent source)",
        "language": ["en"],
        "license": "apache-2.0",
        "license_link": "LICENSE.md",
        "task_categories": ["text-generation"],
        "tags": ["safety", "over-refusal", "multi-turn", "benchmark", "llm-evaluation", "dual-use"],
        "size_categories": ["10K<n<100K"],
        "source_datasets": ["Uppaal/OpenSafeIntent"],
    },
    no_llm_summary=(
        "**This build ran without the LLM stages (`--no-llm`)**: `benign_intent` and `malicious_intent` are "
        "OpenSafeIntent's own descriptions of the dual-use prompt's plausible benign use and meaningful misuse "
        "risk, verbatim: the authors' third-person descriptions, not the user's voice. There is no "
        "`checklists` or `provenance` config: Ben-Util cannot be scored on this build. Its utility is measured "
        "with OpenSafeIntent's own 1-4 helpfulness rubric instead (rubric utility, (score - 1) / 3; MANIFEST.json's "
        "`scoring` records it, and `carryon-eval` picks it when no `--utility` is given; the rubric is read from "
        "the release folder, `--opensafeintent DIR`), and harmfulness is judged as for any build; build with an "
        "endpoint to produce checklists."),
    croissant={
        "license": "Apache-2.0, from OpenSafeIntent (Uppaal et al., 2026); see LICENSE.md",
        "license_url": "https://spdx.org/licenses/Apache-2.0.html",
        "annotation": (
            "OpenSafeIntent's authors wrote each prompt-set (benign, dual-use and malicious versions of one task, "
            "4 paraphrases of the dual-use one) and describe the dual-use prompt's plausible benign use and "
            "meaningful misuse risk. Intents in the user's voice and Ben-Util checklists, when present, are "
            "machine annotations by the LLM stages (models, prompts and parameters in MANIFEST.json)."),
        "personal_sensitive": (
            "No personal data: the prompts are written requests, not real conversations. The content is "
            "sensitive: the dual-use and malicious prompts concern cyber compromise, fraud, weapons, privacy "
            "misuse, harassment and evasion; read them with care."),
        "biases": (
            "The query set inherits OpenSafeIntent's harm domains and task types and its authors' judgment of "
            "benign use and misuse risk. Checklists encode the generator models' view of a helpful answer, and "
            "LLM judges may share their biases."),
    },
    absent_without_llm={
        "checklists": "no checklists: built with `--no-llm` (Ben-Util needs them)",
        "provenance": "no provenance: built with `--no-llm` (it records the LLM stages' decisions)"},
)

# The public release this source is pinned to (its SOURCE.md): a build whose dataset.json is this file records it.
UPSTREAM = {
    "repository": "Uppaal/OpenSafeIntent",
    "url": "https://github.com/Uppaal/OpenSafeIntent",
    "commit": "9706897bc9ffdb328446141b2a4568c98c70843e",
    "files": {
        "dataset.json": "ad9ed2e8f190638b03afd81b69a1350f866706db08bb837b84332c54d29fe7ff",
        "prompts/metrics/helpfulness.txt": "b9292beeab7512a54e68d16620444c6ad705fd5b529dc31bb3eae61b3b4a62da",
        "prompts/metrics/harmfulness.txt": "d638a0f13a6aa166923e1b0f669b57c7eea5cb1fa470b6a7687dcdf66fe6bd61",
        "prompts/metrics/assistance_level_classification.txt":
            "9b0f79ca1813a5a389af143ca11257ab40eddfb20775c195fedf604a45714e8c",
        "prompts/metrics/intent_classification.txt":
            "9eea106593f3094ec517a3de041a2adcfdc3492069ed6f43c9dbde3accf8999a",
    },
}
#: The open release line: its dataset name and current release (releases/open-v1.0.0 freezes its MANIFEST.json).
OPEN_NAME = "carryonbench-open"
OPEN_RELEASE = "open-v1.0.0"

OPENSAFEINTENT = Source(
    name="opensafeintent", title="OpenSafeIntent", read=load_release, select=lambda queries: list(queries),
    select_note="every prompt-set ({dropped} dropped)", looks_like=_looks_like, data_file=data_file,
    query_schema=QUERY_SCHEMA, card=CARD, gated=False, license="Apache-2.0", domains=(),
    skip_stages=("paraphrase",),
    stage_prompts={"intents": "intent_writer_described", "malicious_intent": "malicious_intent_described"},
    manifest_name=OPEN_NAME, default_release=OPEN_RELEASE, upstream=UPSTREAM, query_row=query_row)
