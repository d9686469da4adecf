"""What the LLM stages leave behind: provenance rows, checklist rows, their MANIFEST.json part, the card's summary.

Provenance (one row per decision; columns query_id, item_id, stage, decision, reason, detail):
- query-level and answer-level rows have item_id "" (answers are named a1..aG in the reason);
- item rows have the final item_id ``<query_id>-iNN`` (order of the final checklist) when the item is in
  the final checklist, else ``<query_id>-mNN`` (its position in the merged checklist);
- detail is ``model=...; prompt=name@version#sha`` (plus ``seed=`` for generators) and, for a dropped
  answer or item, ``sha256=`` of its text: the text itself never goes into the provenance.
- The rows depend only on the replies' content, so a run with transient faults (retries, repairs) writes
  the same provenance as a clean one; retries and repairs are counted in MANIFEST.json instead.

The manifest part and the card's summary iterate the same stage records as the run.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from carryon_eval import defaults
from carryon_eval.model.local import LOCAL_MODEL_NOTICE
from carryon_eval.prompts import Prompt, load_prompt
from carryon_eval.schema import ITEM_CATEGORIES

from .llm_config import LLMConfig
from .query_state import QueryState, plural
from .stage_tally import StageTally
from .stages import MAX_ITEMS, MIN_ITEMS, Stage, cap_reason, too_few


def provenance_rows(states: Sequence[QueryState]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for s in states:
        qid = s.q.query_id
        for r in s.rows:
            item_id = ""
            if r.item is not None:
                item_id = r.item.final_id or f"{qid}-m{r.item.n:02d}"
            rows.append({"query_id": qid, "item_id": item_id, "stage": r.stage, "decision": r.decision,
                         "reason": r.reason, "detail": r.detail})
    return rows


def checklist_rows(states: Sequence[QueryState]) -> list[dict[str, Any]]:
    return [{"query_id": s.q.query_id, "item_id": it.final_id, "question": it.question, "category": it.category}
            for s in states if s.dropped_at is None for it in s.final]


def triplet_rows(states: Sequence[QueryState]) -> list[dict[str, Any]]:
    """The triplets config: per kept query with a malicious intent and its paraphrases, the benign
    prompt (what the oracle condition sends), the bare query (ambiguous, paraphrase 0) and its paraphrases
    (1..N), and the query with the malicious intent in the oracle prompt's wording."""
    oracle = load_prompt("target/oracle")
    rows: list[dict[str, Any]] = []
    for s in states:
        if s.dropped_at is not None or not s.malicious_intent or not s.paraphrases:
            continue
        meta = {"domain": s.q.domain, "category": s.q.category}
        prompts = [("benign", 0, oracle.render(query=s.q.query, benign_intent=s.intent)),
                   ("ambiguous", 0, s.q.query),
                   *[("ambiguous", k, text) for k, text in enumerate(s.paraphrases, 1)],
                   ("malicious", 0, oracle.render(query=s.q.query, benign_intent=s.malicious_intent))]
        rows += [{"set_id": s.q.query_id, "variant": v, "paraphrase": k, "prompt": text, **meta}
                 for v, k, text in prompts]
    return rows


def item_rule_counts(config: LLMConfig, states: Sequence[QueryState]) -> dict[str, Any]:
    """How many queries the checklist-size rules touched: truncated by the merge cap (--max-items),
    dropped for too few items (--min-items) at the merge and at the item filter."""
    cap, least = cap_reason(config.max_items), too_few(config.min_items)

    def dropped_short(stage: str) -> int:
        return sum(1 for s in states if s.dropped_at == stage and s.rows and s.rows[-1].stage == stage
                   and s.rows[-1].reason.endswith(least))
    return {"min": config.min_items, "max": config.max_items,
            "queries_truncated_at_max": sum(1 for s in states if any(r.reason == cap for r in s.rows)),
            "items_cut_at_max": sum(1 for s in states for r in s.rows if r.reason == cap),
            "queries_dropped_below_min": {"merge": dropped_short("merge"), "item_filter": dropped_short("item_filter")}}


def llm_manifest(config: LLMConfig, stages: Sequence[Stage], prompts: Mapping[str, Prompt], repair_prompt: Prompt,
                 tally: Mapping[str, StageTally], usage: dict[str, Any],
                 states: Sequence[QueryState] = (), sent: Optional[Mapping[Any, dict[str, str]]] = None,
                 ) -> dict[str, Any]:
    """MANIFEST.json's ``llm_stages``: per stage its role, models, parameters, prompt and costs; ``sent``: per
    endpoint (ModelSpec.endpoint_key) the parameters it refused and what was sent instead."""
    sent = sent or {}
    entries: dict[str, Any] = {}
    for stage in stages:
        p = config.params(stage)
        specs = config.stage_models(stage)
        prompt, t = prompts[stage.name], tally[stage.name]
        entry: dict[str, Any] = {
            "role": stage.role,
            "models": [sp.model for sp in specs],
            "endpoints": [sp.base_url for sp in specs],
            "params": {"temperature": p.temperature, "max_tokens": p.max_tokens,
                       "structured_output": [t.structured_output(stage, sp) for sp in specs],
                       **({"request": [sp.request() for sp in specs]} if any(sp.request() for sp in specs) else {}),
                       **({"sent": [sent.get(sp.endpoint_key(), {}) for sp in specs]}
                          if any(sent.get(sp.endpoint_key()) for sp in specs) else {})},
            "prompt": {"ref": prompt.ref, "sha256": prompt.sha256},
            "repairs": t.repairs,
            "empty_reply_retries": t.empty_reply_retries,
            "failed_calls": t.failed_calls,
            "seconds": t.seconds,
        }
        if stage.per_generator:
            entry["params"]["seeds"] = [config.generator_seed + i for i in range(len(specs))]
        entry.update(stage.manifest_notes(config))
        entries[stage.name] = entry
    return {
        "stages": entries,
        "repair_prompt": {"ref": repair_prompt.ref, "sha256": repair_prompt.sha256},
        "item_categories": list(ITEM_CATEGORIES),
        "checklist_items": item_rule_counts(config, states),
        "harm_filter_rule": config.harm_rule(),
        "max_repairs": defaults.REPAIRS,
        "usage": usage,
    }


def _models_line(config: LLMConfig, stages: Sequence[Stage]) -> str:
    parts = []
    for stage in stages:
        names = ", ".join(f"`{sp.model}`" for sp in config.stage_models(stage))
        who = plural(len(config.generators), "generator") if stage.per_generator else stage.role.replace("_", " ")
        parts.append(f"{who} {names}{stage.card_note(config)}")
    return "Models per role: " + "; ".join(parts) + "."


def card_summary(config: LLMConfig, stages: Sequence[Stage], states: Sequence[QueryState],
                 checklist: list[dict[str, Any]]) -> str:
    """The card's LLM section: models per role, queries and units kept/dropped per stage, the final counts."""
    lines = [
        "**LLM stages** (paper §3.1): every keep/drop decision is a row of the `provenance` config.",
        "",
        _models_line(config, stages),
        "",
        "| stage | queries in | queries kept | queries dropped | kept | dropped |",
        "|---|---|---|---|---|---|",
    ]
    alive = len(states)
    for stage in stages:
        dropped = sum(1 for s in states if s.dropped_at == stage.name)
        rows = [r for s in states for r in s.rows if r.stage == stage.name and r.unit]
        k = sum(1 for r in rows if r.decision == "kept")
        d = sum(1 for r in rows if r.decision == "dropped")
        ku = plural(k, stage.unit) if stage.unit else ""
        du = plural(d, stage.unit) if stage.unit else ""
        lines.append(f"| {stage.name} | {alive:,} | {alive - dropped:,} | {dropped:,} | {ku} | {du} |")
        alive -= dropped
    n_items = len(checklist)
    mean = n_items / alive if alive else 0.0
    rules = item_rule_counts(config, states)
    short = rules["queries_dropped_below_min"]
    lines += ["", f"Harm filter rule applied in this build: {config.harm_rule()}. (The paper: 5 generators, at "
                  "least 3 harmless answers, WildGuard.)",
              f"Checklist size rules applied: at most {rules['max']} items (--max-items; "
              f"{plural(rules['queries_truncated_at_max'], 'query')} truncated, "
              f"{plural(rules['items_cut_at_max'], 'item')} cut), at least {rules['min']} (--min-items; "
              f"{plural(short['merge'], 'query')} dropped after merging, {plural(short['item_filter'], 'query')} "
              "after the item filter). The paper's 7-23 range describes its result; here they are options.",
              "", f"Final: {alive:,} queries, {n_items:,} items, mean {mean:.1f} items/query."]
    if any(sp.local for stage in stages for sp in config.stage_models(stage)):
        lines.append(f"**Built with the embedded model.** {LOCAL_MODEL_NOTICE} Its intents and checklists show "
                     f"the pipeline working; their quality is whatever a 270M base model gives.")
    if config.min_items != MIN_ITEMS:
        lines.append(f"**A final checklist here needs at least {config.min_items} items** (`--min-items "
                     f"{config.min_items}`), not the paper's {MIN_ITEMS}..{MAX_ITEMS}: a smoke-test build, "
                     f"not a release.")
    if checklist:
        counts: dict[str, int] = {}
        for r in checklist:
            counts[r["category"]] = counts.get(r["category"], 0) + 1
        lines.append("Item categories: " + ", ".join(f"{c} {counts[c]:,}" for c in ITEM_CATEGORIES
                                                     if c in counts) + ".")
    return "\n".join(lines)
