"""The CASE-Bench source: ingest and validate its file, then select CarryOnBench's queries (paper, Appendix A.1).

The source is a JSON list of rows, two per query (one safe, one unsafe context):
    query (str), context {sender, recipient, transmission_principle} (each a str or a {str: str} object),
    context_intended_to_be_safe (bool), safe_rate (number in [0, 1]), scores (list of 1 | 2), category (str).
Every problem raises SourceError with a one-line message naming the file, the row index and the field.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..domains import CATEGORIES, DOMAINS, EXCLUDED_CATEGORIES
from .record import CardText, Source, SourceError, SourceQuery, check_unique_ids, query_id_for

CONTEXT_PARTS = ("sender", "recipient", "transmission_principle")


def _label(key: str) -> str:
    return key.replace("_", " ").strip().capitalize()


def _is_leaf(value: Any) -> bool:
    return isinstance(value, (str, int, float)) or (
        isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value))


def _leaf_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_leaf_text(v) for v in value)
    return str(value).strip()


def _is_text_tree(value: Any) -> bool:
    """A non-empty string, or a non-empty object whose values are scalars, lists of scalars or such objects
    (CASE-Bench nests some contexts and has a few numbers, booleans and lists among its leaves)."""
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, dict) and bool(value) and all(
        _is_leaf(v) or _is_text_tree(v) for v in value.values())


def _tree_lines(value: Any, depth: int) -> list[str]:
    pad = "  " * depth
    if isinstance(value, str):
        return [f"{pad}- {value.strip()}"]
    lines: list[str] = []
    for key, sub in value.items():
        if _is_leaf(sub):
            lines.append(f"{pad}- {_label(key)}: {_leaf_text(sub)}")
        else:
            lines.append(f"{pad}- {_label(key)}:")
            lines += _tree_lines(sub, depth + 1)
    return lines


def _context_text(ctx: dict[str, Any]) -> str:
    """The CASE-Bench context as readable text: a heading per part, an indented line per attribute."""
    lines: list[str] = []
    for part in CONTEXT_PARTS:
        lines.append(_label(part) + ":")
        lines += _tree_lines(ctx[part], 0)
    return "\n".join(lines)


def _check_row(path: Path, i: int, row: Any) -> None:
    where = f"{path}: row {i}"
    if not isinstance(row, dict):
        raise SourceError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for key, kind, label in (("query", str, "a non-empty string"), ("category", str, "a string"),
                             ("context", dict, "an object {sender, recipient, transmission_principle}"),
                             ("context_intended_to_be_safe", bool, "true or false"),
                             ("scores", list, "a list of 1 (safe) / 2 (unsafe) ratings")):
        if key not in row:
            raise SourceError(f"{where}: field '{key}' is missing; expected {label}")
        if not isinstance(row[key], kind):
            raise SourceError(f"{where}: field '{key}': expected {label}, got {type(row[key]).__name__}")
    if not row["query"].strip():
        raise SourceError(f"{where}: field 'query': expected a non-empty string, got an empty one")
    rate = row.get("safe_rate")
    if "safe_rate" not in row:
        raise SourceError(f"{where}: field 'safe_rate' is missing; expected a number in [0, 1]")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
        raise SourceError(f"{where}: field 'safe_rate': expected a number in [0, 1], got {rate!r}")
    if not row["scores"]:              # safe_rate stands on these votes: none is no measurement
        raise SourceError(f"{where}: field 'scores': expected a non-empty list of 1 (safe) / 2 (unsafe) "
                          "ratings (the annotators' votes safe_rate stands on), got []")
    if not all(s in (1, 2) and not isinstance(s, bool) for s in row["scores"]):
        raise SourceError(f"{where}: field 'scores': expected a list of 1 (safe) / 2 (unsafe) ratings")
    for part in CONTEXT_PARTS:
        if not _is_text_tree(row["context"].get(part)):
            raise SourceError(f"{where}: field 'context.{part}': expected a non-empty string or an object "
                              "of strings, numbers, lists or nested objects")
    if row["category"] not in CATEGORIES:
        raise SourceError(f"{where}: field 'category': unknown category {row['category']!r}; "
                          f"expected one of SORRY-Bench's {len(CATEGORIES)} categories")


def load_source(path: str | Path) -> list[SourceQuery]:
    """Read and validate the whole file; return every query (all 45 categories), sorted by (category id, query_id)."""
    path = Path(path)
    if not path.is_file():
        raise SourceError(f"{path}: file not found")
    try:
        rows = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: not valid JSON ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise SourceError(f"{path}: JSON nested too deeply to be CASE-Bench rows (expected a list of row "
                          "objects)") from None
    if not isinstance(rows, list) or not rows:
        raise SourceError(f"{path}: expected a non-empty JSON list of rows, got {type(rows).__name__}")

    by_query: dict[str, dict[bool, int]] = {}
    for i, row in enumerate(rows):
        _check_row(path, i, row)
        query = row["query"].strip()
        sides = by_query.setdefault(query, {})
        safe = row["context_intended_to_be_safe"]
        if safe in sides:
            raise SourceError(f"{path}: row {i}: field 'context_intended_to_be_safe': duplicate row: row "
                              f"{sides[safe]} already gives this query's {'safe' if safe else 'unsafe'} context")
        first = next(iter(sides.values()), None)
        if first is not None and rows[first]["category"] != row["category"]:
            raise SourceError(f"{path}: row {i}: field 'category': {row['category']!r} differs from row {first}'s "
                              f"{rows[first]['category']!r} for the same query")
        sides[safe] = i

    queries: list[SourceQuery] = []
    for query, sides in by_query.items():
        if len(sides) != 2:
            (have, i), = sides.items()
            raise SourceError(f"{path}: row {i}: field 'context_intended_to_be_safe': the query has no "
                              f"{'unsafe' if have else 'safe'} context (each query needs one safe and one unsafe row)")
        safe_row, unsafe_row = rows[sides[True]], rows[sides[False]]
        category = safe_row["category"]
        queries.append(SourceQuery(
            query_id=query_id_for(query), query=query, category=category,
            domain=CATEGORIES[category]["domain"], sorry_bench_id=CATEGORIES[category]["sorry_bench_id"],
            benign_context=_context_text(safe_row["context"]),
            malicious_context=_context_text(unsafe_row["context"]),
            safe_rate=float(safe_row["safe_rate"]), unsafe_context_safe_rate=float(unsafe_row["safe_rate"]),
            source_rows=(sides[True], sides[False]),
        ))
    check_unique_ids(path, queries)
    return sorted(queries, key=lambda q: (q.sorry_bench_id, q.query_id))


def select_queries(queries: list[SourceQuery]) -> list[SourceQuery]:
    """Drop the 4 categories CarryOnBench excludes (paper, Appendix A.1)."""
    return [q for q in queries if q.category not in EXCLUDED_CATEGORIES]


def _looks_like(path: Path) -> bool:
    """A JSON file whose first row has CASE-Bench's fields (read only as far as the first row's keys)."""
    if not path.is_file():
        return False
    head = path.open("rb").read(4096).decode("utf-8", "replace")
    return head.lstrip().startswith("[") and '"context_intended_to_be_safe"' in head


def query_row(q: SourceQuery, benign_intent: str, malicious_intent: str) -> dict[str, Any]:
    return {"query_id": q.query_id, "category": q.category, "domain": q.domain, "query": q.query,
            "benign_intent": benign_intent, "benign_context": q.benign_context,
            "malicious_context": q.malicious_context, "safe_rate": q.safe_rate,
            "unsafe_context_safe_rate": q.unsafe_context_safe_rate, "sorry_bench_id": q.sorry_bench_id}


QUERY_SCHEMA = pa.schema([
    ("query_id", pa.string()), ("category", pa.string()), ("domain", pa.string()), ("query", pa.string()),
    ("benign_intent", pa.string()), ("benign_context", pa.string()), ("malicious_context", pa.string()),
    ("safe_rate", pa.float64()), ("unsafe_context_safe_rate", pa.float64()), ("sorry_bench_id", pa.int64()),
])

CARD = CardText(
    template="dataset_card.md",
    license_file="dataset_license.md",
    header={
        "pretty_name": "CarryOnBench",
        "language": ["en"],
        "license": "other",
        "license_name": "carryonbench-research-use",
        "license_link": "LICENSE.md",
        "task_categories": ["text-generation"],
        "tags": ["safety", "over-refusal", "multi-turn", "benchmark", "llm-evaluation"],
        "size_categories": ["1K<n<10K"],
        "source_datasets": ["sorry-bench/sorry-bench-202406", "https://github.com/BriansIDP/CASEBench"],
        "extra_gated_heading": "Access CarryOnBench (derived from gated SORRY-Bench queries)",
        "extra_gated_prompt": (
            "CarryOnBench's queries come from SORRY-Bench and CASE-Bench, which are gated under their own terms. "
            "You agree to accept SORRY-Bench's terms, to use this dataset only to evaluate or improve the "
            "safety and helpfulness of AI systems, and not to use it to elicit or distribute harmful content."),
        "extra_gated_fields": {
            "Name": "text", "Affiliation": "text", "Intended use": "text",
            "I have accepted SORRY-Bench's terms of use": "checkbox",
            "I will use this dataset only for research on AI safety and helpfulness": "checkbox",
        },
    },
    no_llm_summary=(
        "**This build ran without the LLM stages (`--no-llm`)**: `benign_intent` is empty for every "
        "query and there is no `checklists`, `provenance` or `triplets` config. "
        "Ben-Util and the oracle condition need them; build with an endpoint to produce them."),
    croissant={
        "license": "SORRY-Bench's terms apply: see conditionsOfAccess and the card's Access and gating section",
        "annotation": (
            "Safety ratings: CASE-Bench's annotators (about 20 per query and context) judged each query safe or "
            "unsafe in its context; safe_rate and unsafe_context_safe_rate are their shares. Benign intents and "
            "Ben-Util checklists are machine annotations by the LLM stages (models, prompts and parameters in "
            "MANIFEST.json; every keep/drop decision in the provenance config)."),
        "personal_sensitive": (
            "No personal data: the queries are SORRY-Bench's written requests and the contexts are CASE-Bench's "
            "scripted sender/recipient descriptions, not real people. The content is sensitive: the queries look "
            "harmful (hate speech, crimes, self-harm, unqualified advice); read them with care."),
        "biases": (
            "The query set inherits SORRY-Bench's category taxonomy and CASE-Bench's annotator pool. Checklists "
            "encode the generator models' view of a helpful answer, and LLM judges may share their biases."),
    },
    absent_without_llm={
        "checklists": "no checklists: built with `--no-llm`",
        "provenance": "no provenance: built with `--no-llm` (it records the LLM stages' decisions)",
        "triplets": "no triplets: built with `--no-llm` (its benign, malicious and paraphrased prompts are "
                    "generated text)"},
)

CASEBENCH = Source(
    name="casebench", title="CASE-Bench", read=load_source, select=select_queries,
    select_note="after dropping {dropped} queries of the 4 excluded categories", looks_like=_looks_like,
    data_file=lambda path: path, query_schema=QUERY_SCHEMA, card=CARD, gated=True,
    license="carryonbench-research-use (SORRY-Bench's terms)", domains=DOMAINS, has_ratings=True,
    query_row=query_row)
