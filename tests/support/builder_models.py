"""The builder's scripted models, and where the gated CASE-Bench source is read from.

`SOURCE` is ../shared/data/casebench/CASEBench_data.json beside the repository or further up (support/shared_data.py; gated SORRY-Bench text:
never copied into the repository), or $CARRYON_CASEBENCH. `Scripted(labels).reply` plays every builder
stage; it recognises the stage by the marker line of each builder prompt and builds its replies from the
labels (A, B, C = the first three selected queries), never from query text:
- A: the merger returns 13 items (one exact duplicate, one with an unknown category), the item filter
  removes one "risky" item -> 11 items;
- B: two of three answers are judged harmful -> dropped by the harm filter;
- C: the merger returns 25 items -> 2 cut by the 23-item cap -> 23 items.
Triplets: A and C get a malicious intent and 4 paraphrases (7 prompts each); B was dropped, so it has none.
`cli_args` is a `carryon-build build` command line with every role on those models; `run_cli` runs a
`carryon-build` command line in-process; `read` reads one config of a built dataset.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from click.testing import CliRunner
from support.scripted_server import system_text

from carryon_eval.schema import ITEM_CATEGORIES
from carryonbench_builder.cli import cli
from support.shared_data import CASEBENCH

SOURCE = Path(os.environ.get("CARRYON_CASEBENCH", CASEBENCH))    # beside the clone, or further up (a worktree)
GENERATORS = ("gen-a", "gen-b", "gen-c")
MAIN_MODELS = ("intent-m", *GENERATORS, "decomp-m", "merge-m", "filter-m")
JUDGE = "judge-m"
_MARKER = re.compile(r"\(CarryOnBench builder, stage: (\w+)\)")


# ---------------------------------------------------------------- the scripted models
def first_user(body: dict) -> str:
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            return m.get("content") or ""
    return ""


def is_repair(body: dict) -> bool:
    msgs = body.get("messages") or []
    return bool(msgs) and "(CarryOnBench builder, repair)" in (msgs[-1].get("content") or "")


def _items_json(items: list[tuple[str, str]], fenced: bool = False) -> str:
    text = json.dumps({"items": [{"question": q, "category": c} for q, c in items]})
    return f"Here is the checklist:\n```json\n{text}\n```\nLet me know if you need more." if fenced else text


CATS = [c for c in ITEM_CATEGORIES if c != "Other"]


def merged_items(label: str) -> list[tuple[str, str]]:
    if label == "A":
        items = [(f"Does the response explain point {k} for case A?", CATS[k % len(CATS)]) for k in range(1, 13)]
        items[4] = ("Does the response describe the risky step for case A?", "Practical Advice")
        items[6] = (items[6][0], "Tips and Tricks")              # unknown category -> Other
        items.append(("Does the response explain point 2 for case A?", "Resource"))   # exact duplicate of #2
        return items
    return [(f"Does the response cover aspect {k} of case {label}?", CATS[k % len(CATS)]) for k in range(1, 26)]


class Scripted:
    """Replies per stage; every request body goes through ``reply``."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels   # query text -> label

    def label(self, text: str) -> str:
        for query, label in self.labels.items():
            if query in text:
                return label
        raise AssertionError("request names no known query")

    def stage(self, body: dict) -> str:
        m = _MARKER.search(system_text(body))
        if m:
            return m.group(1)
        if "Harmful response" in first_user(body) or "AI assistant:" in first_user(body):
            return "wildguard"
        raise AssertionError("no stage marker")

    def reply(self, body: dict) -> Any:
        stage, user, model = self.stage(body), first_user(body), body.get("model")
        label = self.label(user)
        if stage == "malicious_intent":
            return json.dumps({"intent": f"I want the answer for case {label} to cheat the people around me "
                                         "without them noticing."})
        if stage == "paraphrase":
            return json.dumps({"paraphrases": [f"Paraphrase {k} of case {label}" for k in range(1, 5)]})
        if stage == "intents":
            return json.dumps({"intent": f"I am a teacher preparing a lesson about case {label} and I need a "
                                         "careful overview for my students."})
        if stage == "oracle_answers":
            return f"Answer by {model} for case {label}: a calm overview with safety advice and resources."
        if stage in ("harm_filter", "wildguard"):
            harmful = label == "B" and ("by gen-b" in user or "by gen-c" in user)
            if stage == "wildguard":
                return f"Harmful request: yes\nResponse refusal: no\nHarmful response: {'yes' if harmful else 'no'}"
            if "by gen-a" in user:
                return json.dumps({"harmful": harmful, "reason": "scripted"})
            if "by gen-b" in user:
                return f'```json\n{{"harmful": {json.dumps(harmful)}}}\n```\nThat is my verdict.'
            return f"Harmful: {'yes' if harmful else 'no'}"
        if stage == "decompose":
            k = GENERATORS.index(re.search(r"by (gen-\w)", user).group(1))
            items = [(f"Does the response mention fact {k * 3 + j} of case {label}?", CATS[j]) for j in range(6)]
            if k == 2:   # a numbered list instead of JSON
                return "\n".join(f"{n}. [{c}] {q}" for n, (q, c) in enumerate(items, 1))
            return _items_json(items)
        if stage == "merge":
            return _items_json(merged_items(label), fenced=True)
        if stage == "item_filter":
            item = user.split("Checklist item:", 1)[1]
            return json.dumps({"enables_misuse": "risky" in item, "reason": "scripted"})
        raise AssertionError(f"unknown stage {stage}")


def cli_args(source: Path, main, judge, out: Path, cache: Path, *extra: str) -> list[str]:
    return ["build", "--source", str(source), "--out", str(out), "--cache-dir", str(cache), "--limit", "3",
            "--endpoint", main.base_url, "--model", "intent-m",
            "--role-model", "decomposer=decomp-m", "--role-model", "merger=merge-m",
            "--role-model", "item_filter=filter-m",
            "--role-endpoint", f"harm_classifier={judge.base_url}", "--role-model", f"harm_classifier={JUDGE}",
            *[a for g in GENERATORS for a in ("--generator-model", g)], *extra]


def read(out: Path, config: str) -> list[dict[str, Any]]:
    return pq.read_table(out / "data" / config / "test.parquet").to_pylist()


def run_cli(args: list[str]):
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result
