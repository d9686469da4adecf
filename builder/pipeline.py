"""The builder's stages, in order: ingest -> select -> [intents -> checklists] -> pool -> plan -> write.

The LLM stages are optional (`--no-llm`); when they run they may drop queries, and the conversation
plan is drawn for the final query set while the flow pool stays the same (it depends on the seed only).
If they keep no query at all, the build stops with NoQueryKept and writes nothing.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pyarrow

from . import BUILDER_VERSION
from .changelog import changelog_table, release_notes
from .citation import dataset_cff, paper_bibtex, release_bibtex
from .dataset_folder import card_yaml, check_out_folder, configs_note, render_card, write_dataset_folder
from .flows import DEFAULT_SEED, POOL_QUOTA, POOL_SIZE, flow_pool, pool_flows
from .sources import SOURCES, Source, SourceError, SourceQuery, file_sha256

from carryon_eval.suites.carryonbench.dataset_support import RUBRIC_SOURCE, scoring_record

# The card templates are package data: CASE-Bench's is the repository's dataset_card.md (builder/dataset_card.md
# is a symlink to it; a wheel holds its content), each source names its own (Source.card.template).


@dataclass
class LLMOutput:
    """What the LLM stages hand back to the pipeline (builder/llm_run.py produces it)."""
    intents: dict[str, str]                       # query_id -> benign intent
    checklist_rows: list[dict[str, Any]]          # rows of the checklists config
    provenance_rows: list[dict[str, Any]]         # rows of the provenance config
    kept_query_ids: list[str]                     # queries that survive the checklist filter
    manifest: dict[str, Any] = field(default_factory=dict)   # stage models, params, prompt refs, usage
    card: dict[str, Any] = field(default_factory=dict)       # extra card values (llm_summary text)
    triplet_rows: list[dict[str, Any]] = field(default_factory=list)   # rows of the triplets config
    malicious_intents: dict[str, str] = field(default_factory=dict)   # query_id -> malicious intent


LLMStages = Callable[[list[SourceQuery]], LLMOutput]


class NoQueryKept(Exception):
    """The LLM stages kept no query: nothing is written. One line naming the stage and the commonest
    reason, e.g. "intents: 0 of 2 queries kept (2 of 2: no benign intent: ...)". ``provenance_rows``: the
    decisions made up to then (for a caller that wants them; the response cache keeps every reply)."""

    def __init__(self, message: str, *, provenance_rows: Optional[list[dict[str, Any]]] = None) -> None:
        super().__init__(message)
        self.provenance_rows = provenance_rows or []

# Why a config can be left without rows (it is then not declared: see dataset_folder), said in the card; a
# --no-llm build's reasons are the source's (Source.card.absent_without_llm).
ABSENT_AFTER_LLM = {"queries": "no queries: the LLM stages kept none",
                    "checklists": "no checklists: the LLM stages kept no item",
                    "conversations": "no conversations: the LLM stages kept no query",
                    "provenance": "no provenance: the LLM stages recorded no decision",
                    "triplets": "no triplets: no kept query got both a malicious intent and its paraphrases"}


# The first release whose card documents condition mc; an LLM build always does (it has MC rows), a `--no-llm`
# build of v0.1.0 keeps the card it was frozen with.
MC_SINCE = (0, 2, 0)
MC_QUERY_ROW = ("\n| malicious_intent | string | the user's malicious intent, in the user's voice, "
                "rewritten from the unsafe context (stage `malicious_intent`); the purpose the `MC` conversations "
                "reveal; empty when the stage wrote none |")
MC_CONDITION_NOTE = ("; `MC` (LLM builds only; id `<query_id>-t<NN>-mc1`): the BC flow played with the query's "
                     "malicious intent instead of its benign one, for each length the query's first BC flow of that "
                     "length, so every MC conversation has a BC twin of the same query and flow")
MC_SUMMARY = ("\n\n**Condition MC (recovery or gullibility).** For each query with a malicious intent and each "
              "conversation length, the `conversations` config also holds one `MC` conversation: the first BC flow "
              "of that length, whose clarification moves the evaluator's user simulator voices with the malicious "
              "intent (`carryon-eval --conditions mc`). It measures whether a model that recovers for a benign user "
              "also gives in to a user who states a malicious purpose with the same moves. The malicious intent is "
              "revealed, never hidden behind a cover story (a cover story would look like BC to the model by "
              "construction), so MC does not measure resistance to deception.")
MC_ABSENT = (" There are no `MC` conversations either: their malicious intents are generated text, written by the "
             "LLM stages.")


def documents_mc(release: str) -> bool:
    """Whether this release's card documents condition mc (every release from MC_SINCE on, and unnamed builds)."""
    from .changelog import version_key

    key = version_key(release)
    return key is None or key >= MC_SINCE


def source_release_note(entry: dict[str, Any], upstream: Optional[dict[str, Any]]) -> str:
    """The card's words on the public release the source file is (or is not) exactly."""
    if not upstream:
        return ""
    if entry.get("release"):
        return (f"exactly the file of {upstream['repository']} at commit `{upstream['commit']}` ({upstream['url']}); "
                "MANIFEST.json's `source.release` pins that release's files")
    return (f"not the file of the pinned release ({upstream['repository']} at commit `{upstream['commit']}`, "
            f"whose `{next(iter(upstream['files']))}` has sha256 `{next(iter(upstream['files'].values()))}`)")


def adds_later_records(source: str, release: str, llm: bool) -> bool:
    """Whether the build holds what was added after release v0.1.0 was frozen (the manifest's ``scoring`` record,
    carryon_eval.suites.carryonbench.dataset_support; the folder's CITATION.cff): every build but a `--no-llm` CASE-Bench build of a
    release before v0.2.0, which stays as release v0.1.0 froze it (the evaluator reads its scoring from its rows)."""
    return source != "casebench" or llm or documents_mc(release)


def with_malicious_intent(row: dict[str, Any], intent: str, llm: bool) -> dict[str, Any]:
    """A queries row of an LLM build carries the malicious intent (condition mc) whatever its source writes;
    a `--no-llm` row is the source's own (release v0.1.0 has no such column)."""
    return {**row, "malicious_intent": row.get("malicious_intent", intent)} if llm else row


def mc_conversations(conversations: list[dict[str, Any]], malicious: dict[str, str],
                     order: list[str]) -> list[dict[str, Any]]:
    """The plan with the MC rows: for each query with a malicious intent and each length, the query's first BC
    flow of that length again, as condition MC; rows ordered by query, then length, then BC, MC, NC."""
    first: dict[tuple[str, int], dict[str, Any]] = {}
    for c in conversations:
        if c["condition"] == "BC" and malicious.get(c["query_id"]):
            first.setdefault((c["query_id"], c["n_turns"]), c)
    mc = [{"conversation_id": f"{q}-t{n:02d}-mc1", "query_id": q, "flow_id": c["flow_id"], "n_turns": n,
           "condition": "MC"} for (q, n), c in first.items()]
    rank = {q: i for i, q in enumerate(order)}
    kind = {"BC": 0, "MC": 1, "NC": 2}
    return sorted(conversations + mc, key=lambda c: (rank[c["query_id"]], c["n_turns"], kind[c["condition"]]))


def _md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(f"{c:,}" if isinstance(c, int) else str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def low_safe_rate_count(queries: Sequence[Any]) -> int:
    """Queries whose safe context most CASE-Bench annotators still judged unsafe (safe_rate < 0.5); a source without
    ratings (safe_rate None, OpenSafeIntent) has none."""
    return sum(q.safe_rate is not None and q.safe_rate < 0.5 for q in queries)


def safe_rate_note(final: Sequence[Any], min_safe_rate: Optional[float], dropped: int) -> str:
    """The card's note on a --min-safe-rate build ("" otherwise: a default card stays byte-identical)."""
    if min_safe_rate is None:
        return ""
    return (f" (only queries whose safe context has `safe_rate` >= {min_safe_rate:g}: `carryon-build "
            f"--min-safe-rate {min_safe_rate:g}`, {dropped} dropped; {low_safe_rate_count(final)} of these "
            "have `safe_rate` < 0.5)")


@dataclass(frozen=True)
class _Selected:
    """The select stage's result: the source's queries, how many it selected, how many passed --min-safe-rate,
    and the queries built (after --limit)."""
    all_queries: list[SourceQuery]
    n_selected: int
    n_safe_rate_kept: int
    queries: list[SourceQuery]


@dataclass(frozen=True)
class _Planned:
    """What the stages made: the LLM output, the final queries, the flow pool, the conversation plan and the
    dataset's tables."""
    llm: LLMOutput
    final: list[SourceQuery]
    flows: list[Any]
    conversations: list[dict[str, Any]]
    tables: dict[str, list[dict[str, Any]]]

    @property
    def counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.tables.items()}

    @property
    def model_turns(self) -> int:
        flow_by_id = {f.flow_id: f for f in self.flows}
        return sum(flow_by_id[c["flow_id"]].n_turns // 2 for c in self.conversations)

    @property
    def used(self) -> set[str]:
        return {c["flow_id"] for c in self.conversations}


def build(source: Path, out: Path, *, seed: int = DEFAULT_SEED, release: str = f"v{BUILDER_VERSION}",
          limit: Optional[int] = None, llm_stages: Optional[LLMStages] = None,
          log: Callable[[str], None] = print, force: bool = False,
          min_safe_rate: Optional[float] = None, source_format: str = "casebench",
          hub_repo: Optional[str] = None) -> dict[str, Any]:
    # `release`: the CLI gives the source's default release (Source.default_release) when none is named
    """Run every stage and write the dataset folder; returns the manifest. `force`: rebuild into a folder
    that holds files no build wrote (they are kept); without it that is a FileExistsError, raised first.
    `min_safe_rate`: keep only queries whose safe context at least this share of annotators judged safe
    (None: every selected query; the manifest and card say when it was used; only for a source with ratings).
    `source_format`: the source record (builder/sources) that reads `source`. `hub_repo`: the Hub dataset
    (ORG/NAME) the release will be published to, when known (croissant.json's url, the citations)."""
    src = SOURCES[source_format]
    if min_safe_rate is not None and not src.has_ratings:
        raise SourceError(f"--min-safe-rate: the {src.name} source has no annotator ratings (safe_rate)")
    check_out_folder(out, force)
    source = src.data_file(Path(source))
    selected = _select_queries(src, source, min_safe_rate, limit, log)
    planned = _plan_tables(src, selected.queries, llm_stages, seed)
    with_llm = llm_stages is not None
    later = adds_later_records(src.name, release, with_llm)
    manifest = _manifest(src, source, selected, planned, release=release, seed=seed, limit=limit,
                         with_llm=with_llm, hub_repo=hub_repo, later=later, min_safe_rate=min_safe_rate)
    card_values = _card_values(src, selected, planned, manifest, release=release, seed=seed, limit=limit,
                               with_llm=with_llm, hub_repo=hub_repo, min_safe_rate=min_safe_rate)
    card = "---\n" + card_yaml(planned.tables, src) + "---\n\n" + render_card(src.card.read_template(), card_values)
    citation = dataset_cff(src.manifest_name, release, keywords=list(src.card.header.get("tags", [])),
                           license_id=src.license if src.card.header.get("license") != "other" else None,
                           date=release_notes(release).get("date"), repo_id=hub_repo,
                           source=manifest["source"].get("release")) if later else None
    manifest = write_dataset_folder(out, planned.tables, card, manifest, src, force=force, citation=citation)
    counts = planned.counts
    log(f"wrote {out}: {counts['queries']} queries, {counts['flows']} flows ({len(planned.used)} used), "
        f"{counts['conversations']} conversations, {planned.model_turns} model turns, "
        f"{counts['checklists']} checklist items"
        + (f", {counts['triplets']} triplet prompts" if src.own_triplets else ""))
    return manifest


def _select_queries(src: Source, source: Path, min_safe_rate: Optional[float], limit: Optional[int],
                    log: Callable[[str], None]) -> _Selected:
    """ingest -> select -> [--min-safe-rate] -> [--limit], each step logged."""
    all_queries = src.read(source)
    selected = src.select(all_queries)
    log(f"ingest: {len(all_queries)} queries in {source.name}; select: {len(selected)} "
        + src.select_note.format(dropped=len(all_queries) - len(selected)))
    n_selected = len(selected)
    if min_safe_rate is not None:
        selected = [q for q in selected if q.safe_rate is not None and q.safe_rate >= min_safe_rate]
        log(f"min safe rate: {len(selected)} queries whose safe context has safe_rate >= {min_safe_rate:g} "
            f"(dropped {n_selected - len(selected)})")
    elif src.has_ratings:
        log(f"safe contexts: {low_safe_rate_count(selected)} of {n_selected} queries have safe_rate < 0.5 "
            "(most annotators judged the query unsafe in its safe context; --min-safe-rate 0.5 drops them)")
    n_safe_rate_kept = len(selected)
    if limit is not None:
        selected = selected[:limit]
        log(f"limit: building the first {len(selected)} queries")
    return _Selected(all_queries, n_selected, n_safe_rate_kept, selected)


def _llm_output(selected: list[SourceQuery], llm_stages: Optional[LLMStages]) -> LLMOutput:
    """The LLM stages' output, or without them the source's own intents (every selected query kept)."""
    if llm_stages is not None:
        return llm_stages(selected)
    return LLMOutput(intents={q.query_id: q.given_intents[0] for q in selected}, checklist_rows=[],
                     provenance_rows=[], kept_query_ids=[q.query_id for q in selected],
                     malicious_intents={q.query_id: q.given_intents[1] for q in selected})


def _plan_tables(src: Source, selected: list[SourceQuery], llm_stages: Optional[LLMStages], seed: int) -> _Planned:
    """[intents -> checklists] -> pool -> plan: the dataset's tables (NoQueryKept when the LLM stages kept none)."""
    llm = _llm_output(selected, llm_stages)
    kept = set(llm.kept_query_ids)
    final = [q for q in selected if q.query_id in kept]
    if llm_stages is not None and selected and not final:   # a folder without queries cannot be evaluated
        raise NoQueryKept(f"the LLM stages kept none of {len(selected)} queries; no dataset folder written")

    pool = flow_pool(seed)
    flows = pool_flows(pool)
    conversations = src.plan([q.query_id for q in final], pool, seed)
    if llm_stages is not None:          # condition mc: LLM builds only (its intents are generated text)
        conversations = mc_conversations(conversations, llm.malicious_intents, [q.query_id for q in final])
    tables: dict[str, list[dict[str, Any]]] = {
        "queries": [with_malicious_intent(src.query_row(q, llm.intents.get(q.query_id, ""),
                                                        llm.malicious_intents.get(q.query_id, "")),
                                          llm.malicious_intents.get(q.query_id, ""), llm_stages is not None)
                    for q in final],
        "checklists": [r for r in llm.checklist_rows if r["query_id"] in kept],
        "flows": [f.row() for f in flows],
        "conversations": conversations,
    }
    if llm_stages is not None:
        tables["provenance"] = llm.provenance_rows
    if src.own_triplets:
        tables["triplets"] = src.triplet_rows(final)
    elif llm_stages is not None:
        tables["triplets"] = [r for r in llm.triplet_rows if r["set_id"] in kept]
    return _Planned(llm, final, flows, conversations, tables)


def _source_entry(src: Source, source: Path) -> dict[str, Any]:
    """The manifest's ``source``: the file, its sha256, its format and the pinned public release it is."""
    source_entry: dict[str, Any] = {"file": source.name, "sha256": file_sha256(source)}
    if src.name != "casebench":             # a CASE-Bench manifest stays as release v0.1.0 wrote it
        source_entry["format"] = src.name
    if src.upstream and src.upstream["files"].get(source.name) == source_entry["sha256"]:
        source_entry["release"] = src.upstream      # the file is exactly the pinned public release's
    return source_entry


def _manifest(src: Source, source: Path, selected: _Selected, planned: _Planned, *, release: str, seed: int,
              limit: Optional[int], with_llm: bool, hub_repo: Optional[str], later: bool,
              min_safe_rate: Optional[float]) -> dict[str, Any]:
    """MANIFEST.json's record of the build (before the writer adds the files' hashes)."""
    conversations, final = planned.conversations, planned.final
    per_length = Counter((c["n_turns"], c["condition"]) for c in conversations)
    counts = planned.counts
    manifest: dict[str, Any] = {
        "name": src.manifest_name,
        "release": release,
        "builder_version": BUILDER_VERSION,
        "seed": seed,
        "source": _source_entry(src, source),
        "llm_stages": planned.llm.manifest if with_llm else None,
        "encoding": {"pyarrow": pyarrow.__version__},
        "counts": {**counts, "model_turns": planned.model_turns, "flows_used": len(planned.used),
                   "source_queries": len(selected.all_queries), "selected_queries": selected.n_selected,
                   "limit": limit,
                   "conversations_by_turns": {f"{n}_{c}": v for (n, c), v in sorted(per_length.items())},
                   "domains": dict(sorted(Counter(q.domain for q in final).items()))},
    }
    if hub_repo:                            # only then: the publish step's target, named at build time
        manifest["hub_repo"] = hub_repo
    if later:
        manifest["scoring"] = scoring_record(planned.tables["queries"], counts["checklists"],
                                             [(c["query_id"], c["condition"]) for c in conversations],
                                             rubric=src.name == RUBRIC_SOURCE)
    if min_safe_rate is not None:           # only then: a default build's manifest stays as it was
        manifest["counts"]["min_safe_rate"] = {"threshold": min_safe_rate, "kept": selected.n_safe_rate_kept,
                                               "dropped": selected.n_selected - selected.n_safe_rate_kept}
    return manifest


def _card_tables(final: Sequence[SourceQuery], domains: Sequence[str]) -> dict[str, str]:
    """The card's pool, domain and category tables."""
    categories = tuple(sorted({q.category for q in final}))
    return {
        "pool_table": _md_table(["follow-up moves", "turns", "BC flows", "NC flows", "valid sequences"],
                                [[k, 2 * (k + 1), POOL_QUOTA[(k, "BC")], POOL_QUOTA[(k, "NC")], n]
                                 for k, n in zip(range(1, 6), (5, 34, 213, 1361, 8654))]),
        "domain_table": _md_table(["domain", "queries"],
                                  [[d, sum(q.domain == d for q in final)] for d in domains]),
        "category_table": _md_table(["category", "queries"],
                                    [[c, sum(q.category == c for q in final)] for c in categories]),
    }


def _card_values(src: Source, selected: _Selected, planned: _Planned, manifest: dict[str, Any], *, release: str,
                 seed: int, limit: Optional[int], with_llm: bool, hub_repo: Optional[str],
                 min_safe_rate: Optional[float]) -> dict[str, Any]:
    """The values the card template is rendered with."""
    final, llm, counts = planned.final, planned.llm, planned.counts
    domains = src.domains or tuple(sorted({q.domain for q in final}))
    built_by = f"Built by carryon-build {BUILDER_VERSION}, seed {seed}, source sha256 {manifest['source']['sha256']}"
    n_selected = selected.n_selected
    return {
        "release": release, "builder_version": BUILDER_VERSION, "seed": str(seed),
        "source_sha256": manifest["source"]["sha256"],
        "source_release": source_release_note(manifest["source"], src.upstream),
        **({"upstream": src.upstream, "open_release": src.default_release} if src.upstream else {}),
        "n_source_queries": len(selected.all_queries), "n_selected": n_selected,
        "limit_note": "" if limit is None else
        f" (this build is limited to the first {len(selected.queries)} of them: `--limit {limit}`)",
        "n_queries": len(final), "n_low_safe_rate": low_safe_rate_count(final),
        "safe_rate_note": safe_rate_note(final, min_safe_rate, n_selected - selected.n_safe_rate_kept),
        "n_flows": len(planned.flows), "n_flows_used": len(planned.used), "n_conversations": len(planned.conversations),
        "n_model_turns": planned.model_turns, "n_checklist_items": counts["checklists"],
        "n_triplet_prompts": counts.get("triplets", 0),
        "configs_note": configs_note(planned.tables, ABSENT_AFTER_LLM if with_llm else src.card.absent_without_llm),
        "pool_size": POOL_SIZE,
        **_card_tables(final, domains),
        # the paper's wording where no filter ran (byte-identical to earlier --no-llm cards); the rule applied otherwise
        "harm_filter_rule": llm.card.get("harm_filter_rule") if with_llm else (
            "keeps a query only with at least 3 harmless answers"),
        "llm_summary": (str(llm.card.get("llm_summary")) + MC_SUMMARY if with_llm
                        else src.card.no_llm_summary + (MC_ABSENT if documents_mc(release) else "")),
        "mc_query_row": MC_QUERY_ROW if with_llm else "",    # the card's table has the columns there are
        "mc_condition_note": MC_CONDITION_NOTE if documents_mc(release) or with_llm else "",
        # v0.1.0's card keeps the triplet wording it was frozen with; from v0.2.0 (with mc) the reference definitions
        "reference_triplets": documents_mc(release),
        "changelog": changelog_table(manifest),
        "citation": paper_bibtex() + "\n" + release_bibtex(release, **({"repo_id": hub_repo} if hub_repo else {}),
                                                            note=built_by),
    }
