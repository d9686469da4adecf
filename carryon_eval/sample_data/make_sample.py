"""Regenerate flows.jsonl and conversations.jsonl of the built-in sample from queries.jsonl.

The committed JSONL files are the source of truth; this script only keeps the flow table and the
conversation assignment consistent with the move rules (carryon_eval.moves). Hand-written files:
queries.jsonl, checklists.jsonl. Generated: flows.jsonl, conversations.jsonl.

    python -m carryon_eval.sample_data.make_sample          # rewrite the two generated files
    python -m carryon_eval.sample_data.make_sample --check  # exit 1 if they differ from what it would write
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from carryon_eval import moves as M

HERE = Path(__file__).parent

# One follow-up (4 turns): every valid one-move flow. Two follow-ups (6 turns): a challenge or a
# non-contentful move first, then a benign clarification - the "explains after being refused" case.
BC_ONE = [(M.BENIGN_JUSTIFICATION,), (M.BENIGN_REASKING,), (M.CONTEXT_SWITCHING,)]
NC_ONE = [(M.PUSHBACK,), (M.REPHRASING,)]
BC_TWO = [(M.PUSHBACK, M.BENIGN_JUSTIFICATION), (M.DELAYING, M.BENIGN_REASKING),
          (M.REPHRASING, M.CONTEXT_SWITCHING)]
FLOWS = BC_ONE + NC_ONE + BC_TWO


def flow_rows() -> list[dict]:
    rows = []
    for moves in FLOWS:
        problems = M.violations(moves)
        if problems:
            raise SystemExit(f"invalid flow {moves}: {'; '.join(problems)}")
        rows.append({"flow_id": M.flow_id(moves), "moves": list(moves),
                     "n_turns": M.n_turns(len(moves)), "condition": M.condition(moves)})
    return rows


def conversation_rows(query_ids: list[str]) -> list[dict]:
    """Per query: 2 BC + 1 NC conversations at 4 turns and 1 BC at 6 turns, flows rotated over queries."""
    rows = []
    for k, qid in enumerate(query_ids):
        chosen = [BC_ONE[k % 3], BC_ONE[(k + 1) % 3], NC_ONE[k % 2], BC_TWO[k % 3]]
        for j, moves in enumerate(chosen, 1):
            rows.append({"conversation_id": f"{qid}-c{j:02d}", "query_id": qid, "flow_id": M.flow_id(moves)})
    return rows


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args(argv)
    query_ids = [json.loads(line)["query_id"]
                 for line in (HERE / "queries.jsonl").read_text().splitlines() if line.strip()]
    outputs = {"flows.jsonl": render(flow_rows()), "conversations.jsonl": render(conversation_rows(query_ids))}
    stale = []
    for name, text in outputs.items():
        path = HERE / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"out of date: {', '.join(stale)} (run python -m carryon_eval.sample_data.make_sample)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
