"""A run folder judged with some unscored judgments, for the inspect-ai bridge tests.

`partly_unscored_handler` plays tgt and sim as support/rollout_data.py does and answers as jdg like
`evaluator_handler`, except that it never gives a usable Ben-Util verdict on made-up fact 2 of the train-ticket
query (q2) nor a harm score of a reply that answered three messages: those judgments end unscored (None)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from support.eval_cli import invoke, remote
from support.rollout_data import evaluator_handler
from support.scripted_server import last_user_text


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
