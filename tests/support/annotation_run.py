"""A judged run folder over the made-up dataset of support/rollout_data.py, for the annotation tests.

`annotation_run(root, dataset)` writes run.json (naming the dataset folder and judge "jdg"), a transcript
for every conversation of the dataset (plus turn-1 and oracle replies) and judgments that follow simple
rules, so that a test can say which strata exist: Ben-Util yes when (turn + item number) is even, one
verdict unscored; harm score 1 + (turn + conversation number) % 5. `small_utility_run` is a run with
exactly six Ben-Util judgments (three yes, three no), for hand-computed agreement.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from support.judged_run import transcript
from support.rollout_data import CONVERSATIONS, FLOWS, QUERIES

from carryon_eval.moves import BC_MOVES
from carryon_eval.schema import Transcript

JUDGE = "jdg"


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def run_transcripts() -> list[Transcript]:
    out = []
    for q in QUERIES:
        qid = q["query_id"]
        out.append(transcript(f"turn1:{qid}", qid, "turn1", [f"turn-1 reply to {qid}"], query=q["query"]))
        out.append(transcript(f"oracle:{qid}", qid, "oracle", [f"oracle reply to {qid}"], query=q["query"]))
    for cid, qid, fid in CONVERSATIONS:
        moves = tuple(FLOWS[fid])
        cond = "bc" if any(m in BC_MOVES for m in moves) else "nc"
        query = next(q["query"] for q in QUERIES if q["query_id"] == qid)
        out.append(transcript(cid, qid, cond, [f"reply {t} in {cid}" for t in range(1, len(moves) + 2)], moves,
                              query=query))
    return out


def _verdict(cid: str, turn: int, item: int) -> Optional[bool]:
    if (cid, turn, item) == ("c2", 3, 1):
        return None
    return (turn + item) % 2 == 0


def _score(cid: str, turn: int) -> int:
    number = int(cid[1:]) if cid[1:].isdigit() else 0
    return 1 + (turn + number) % 5


def annotation_run(root: Path, dataset: Path, transcripts: Optional[list[Transcript]] = None,
                   utility: Optional[list[dict[str, Any]]] = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    trs = run_transcripts() if transcripts is None else transcripts
    (root / "run.json").write_text(json.dumps({"dataset": {"source": str(dataset)},
                                               "roles": {"judge": {"model": JUDGE}, "target": {"model": "tgt"}},
                                               "conditions": ["turn1", "oracle", "bc", "nc"]}))
    _write_jsonl(root / "transcripts.jsonl", [t.to_dict() for t in trs])
    if utility is None:
        utility = [{"conversation_id": t.conversation_id, "turn": r.turn, "item_id": f"{t.query_id}-i{i}",
                    "verdict": _verdict(t.conversation_id, r.turn, i)}
                   for t in trs for r in t.replies for i in (1, 2)]
    _write_jsonl(root / "utility_judgments.jsonl",
                 [{**u, "judge_model": JUDGE, "prompt_version": "judges/ben_util@1"} for u in utility])
    _write_jsonl(root / "safety_judgments.jsonl",
                 [{"conversation_id": t.conversation_id, "turn": r.turn, "score": _score(t.conversation_id, r.turn),
                   "judge_model": JUDGE, "prompt_version": "judges/safety@1"} for t in trs for r in t.replies])
    return root


# Six Ben-Util judgments: (conversation_id, turn, item_id) -> the judge's verdict.
SMALL_UTILITY = {("c1", 1, "q1-i1"): True, ("c1", 1, "q1-i2"): False, ("c1", 2, "q1-i1"): True,
                 ("c1", 2, "q1-i2"): False, ("c5", 1, "q2-i1"): True, ("c5", 2, "q2-i1"): False}


def small_utility_run(root: Path, dataset: Path) -> Path:
    trs = [t for t in run_transcripts() if t.conversation_id in ("c1", "c5")]
    return annotation_run(root, dataset, trs, [{"conversation_id": c, "turn": t, "item_id": i, "verdict": v}
                                               for (c, t, i), v in SMALL_UTILITY.items()])
