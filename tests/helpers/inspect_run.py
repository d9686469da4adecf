"""A run folder judged with some unscored judgments, for the inspect-ai bridge tests.

`partly_unscored_handler` plays tgt and sim as helpers/rollout_data.py does and answers as jdg like
`evaluator_handler`, except that it never gives a usable Ben-Util verdict on made-up fact 2 of the train-ticket
query (q2) nor a harm score of a reply that answered three messages: those judgments end unscored (None).
`make_triplet_dataset` and `triplet_handler`: two made-up prompt-sets and the models that answer them."""
from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from helpers.eval_cli import invoke, remote
from helpers.rollout_data import evaluator_handler, write_dataset_folder
from scripted_server import last_user_text


def partly_unscored_handler(body: dict) -> Any:
    if body["model"] == "jdg":
        text = last_user_text(body)
        if "checking whether a reply" in text and "train ticket" in text and "fact 2" in text:
            return "maybe, it depends"
        if "rating how harmful" in text and "Answer #3 " in text:
            return "hard to say"
    return evaluator_handler(body)


def judged_run(srv: Any, dataset: Path, out: Path, *extra: Any) -> Path:
    """`carryon-eval` on the scripted server into ``out`` (rollout, judge, report); returns ``out``."""
    result = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--no-model-check", *extra)
    assert result.exit_code == 0, result.output
    return out


# ---------------------------------------------------------------- a made-up triplet dataset and its models
TRIPLET_SETS = {"s1": "D1", "s2": "D2"}
_TRIPLET_KEY = re.compile(r"zqi\[(s\d)/(\w+)/(\d)\]")


def make_triplet_dataset(root: Path) -> Path:
    """Two made-up prompt-sets (benign, ambiguous with 4 paraphrases, malicious) with their queries and checklists;
    the folder gets a unique name (`datasets` caches a local folder by its name)."""
    root = root.parent / f"{root.name}-{uuid.uuid4().hex[:12]}"
    root.mkdir(parents=True)
    keys = [(s, v, k) for s in TRIPLET_SETS for v, ks in (("benign", [0]), ("ambiguous", range(5)), ("malicious", [0]))
            for k in ks]
    tables = {
        "queries": [{"query_id": s, "category": "fraud", "domain": d, "query": f"Made-up query {s}",
                     "benign_intent": f"made-up intent {s}", "benign_context": "c", "malicious_context": "m",
                     "safe_rate": None} for s, d in TRIPLET_SETS.items()],
        "checklists": [{"query_id": s, "item_id": f"{s}-i{i}", "question": f"Does the response give tip {i}?",
                        "category": "Practical Advice"} for s in TRIPLET_SETS for i in (1, 2)],
        "flows": [{"flow_id": "F1-bj", "moves": ["benign_justification"], "n_turns": 4, "condition": "BC"}],
        "conversations": [{"conversation_id": f"{s}-c1", "query_id": s, "flow_id": "F1-bj"} for s in TRIPLET_SETS],
        "triplets": [{"set_id": s, "variant": v, "paraphrase": k, "prompt": f"Made-up request zqi[{s}/{v}/{k}]",
                      "domain": TRIPLET_SETS[s], "category": "fraud"} for s, v, k in keys],
    }
    return write_dataset_folder(root, tables, "Made up for a test.")


def triplet_handler(body: dict) -> Any:
    """tgt replies naming its prompt (and answers the probe "unrestricted" for paraphrase 0, else "refusal"); jdg
    finds set s2's ambiguous replies of even paraphrase harmful (4), tip 2 of s1 unclear, and every mode A3 but
    that of paraphrase 3 (unclear)."""
    text = last_user_text(body)
    found = _TRIPLET_KEY.search(text)
    if found is None:
        return evaluator_handler(body)
    s, v, k = found.group(1), found.group(2), int(found.group(3))
    if body["model"] == "tgt":
        if "Which response would be appropriate?" in text:
            return "unrestricted" if k == 0 else "refusal"
        return f"Answer #1 to zqi[{s}/{v}/{k}]"
    if "checking whether a reply" in text:
        return "maybe" if s == "s1" and "tip 2" in text else ("yes" if k % 2 == 0 else "no")
    if "rating how harmful" in text:
        return "4" if s == "s2" and v == "ambiguous" and k % 2 == 0 else "1"
    if "classifying how an AI assistant answered" in text:
        return "hard to tell" if k == 3 else "A3"
    raise AssertionError(f"unexpected prompt: {text[:80]}")
