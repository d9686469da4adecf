"""`carryon-build build --dry-run`: calls and tokens per LLM stage, estimated without calling anything.

The same estimate is logged before a real build spends anything. Each stage record says how many calls
one query costs and with which (typical) prompt values; the prompt itself is rendered to count tokens.
"""
from __future__ import annotations

from typing import Any

from carryon_eval import defaults
from carryon_eval.model.endpoint import describe_temperature

from .llm_config import LLMConfig
from .query_state import plural
from .sources.record import SourceQuery
from .stages import TYPICAL_FINAL_ITEMS, stages_for, typical_inputs

PAPER_QUERIES = 398             # the paper's dataset: what a dry run without --source plans for
TYPICAL_QUERY_CHARS = 120
NO_ENDPOINT = "(endpoint not given)"   # a dry run needs none: what it shows where a role's endpoint would be


def placeholder_queries(n: int = PAPER_QUERIES) -> list[SourceQuery]:
    """Queries of typical length, for a dry run without the (gated) source."""
    text = "x" * TYPICAL_QUERY_CHARS
    return [SourceQuery(query_id=f"q{i:04d}", query=text, category="", domain="", benign_context=text,
                        malicious_context=text, source_rows=(i, i), safe_rate=1.0, unsafe_context_safe_rate=0.0,
                        sorry_bench_id=0) for i in range(n)]


def estimate_tokens(text: str) -> int:
    """~4 characters per token (English text, common BPE tokenizers)."""
    return max(1, (len(text) + 3) // 4)


def dry_run_plan(queries: list[SourceQuery], config: LLMConfig) -> list[dict[str, Any]]:
    """Calls and tokens per stage, without calling anything. Calls after the first stages are upper
    bounds (every answer harmless); item_filter calls use the paper's mean checklist size; completion
    tokens are given as typical and as max_tokens; repairs and re-asks are not counted."""
    typical = typical_inputs(config)
    rows = []
    for stage in stages_for(config):
        prompt = stage.template()
        calls = prompt_tokens = 0
        for q in queries:
            n, values = stage.plan(q, typical)
            calls += n
            prompt_tokens += n * sum(estimate_tokens(m["content"]) for m in prompt.messages(**values))
        p = config.params(stage)
        rows.append({"stage": stage.name, "role": stage.role,
                     "models": [sp.model for sp in config.stage_models(stage)],
                     "calls": calls, "prompt_tokens": prompt_tokens,
                     "completion_tokens_typical": calls * p.typical_tokens,
                     "completion_tokens_max": calls * p.max_tokens})
    return rows


def format_dry_run(rows: list[dict[str, Any]], n_queries: int, n_generators: int,
                   config: LLMConfig | None = None) -> str:
    header = ("stage", "role", "model(s)", "calls", "prompt tok", "completion tok (typical)",
              "completion tok (max)")
    table = [header] + [(r["stage"], r["role"], ",".join(dict.fromkeys(r["models"])), f"{r['calls']:,}",
                         f"{r['prompt_tokens']:,}", f"{r['completion_tokens_typical']:,}",
                         f"{r['completion_tokens_max']:,}") for r in rows]
    total = ("total", "", "", f"{sum(r['calls'] for r in rows):,}", f"{sum(r['prompt_tokens'] for r in rows):,}",
             f"{sum(r['completion_tokens_typical'] for r in rows):,}",
             f"{sum(r['completion_tokens_max'] for r in rows):,}")
    table.append(total)
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    lines = [f"dry run: {plural(n_queries, 'query')}, {plural(n_generators, 'generator')}; no endpoint was called"]
    for row in table:
        lines.append("  ".join(str(c).ljust(w) if i < 3 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))))
    cap = config.max_items if config is not None else "--max-items"
    lines.append("Estimates: prompt tokens ~ characters/4 of the rendered prompts (intents, answers and items at "
                 f"typical sizes); decompose and harm_filter calls assume every answer survives; item_filter "
                 f"assumes {TYPICAL_FINAL_ITEMS} items per query (at most {cap}); repairs (at most "
                 f"{defaults.REPAIRS} per malformed reply) are not counted.")
    if config is not None:
        lines.append(f"Harm filter: {config.harm_rule()}.")
        lines.append(f"Checklists: {config.min_items} to {config.max_items} items (--min-items, --max-items); "
                     f"generators sample at temperature {describe_temperature(config.generator_temperature)}, seeds "
                     f"{config.generator_seed}..{config.generator_seed + len(config.generators) - 1}.")
    return "\n".join(lines)
