"""A run whose target dies part-way: the planned conversations it never played are unknown, read like
conversations whose every judgment is unscored. Its numbers stand on what was played, their bounds span every
value the rest could take, so they hold the values of the same run played to the end; table.md marks them and
the leaderboard does not rank the run. Against the scripted server (real HTTP), the target killed mid-run."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

from support.eval_cli import invoke
from support.rollout_data import evaluator_handler, make_dataset
from support.scripted_server import ScriptedServer

from carryon_eval.cli import INCOMPLETE


class DiesAfter:
    """The target's server stops (connections refused) after answering ``after`` target requests."""

    def __init__(self, after: int) -> None:
        self.after, self.n, self.lock = after, 0, threading.Lock()
        self.server: Optional[ScriptedServer] = None

    def __call__(self, body: dict) -> Any:
        with self.lock:
            if body.get("model") == "tgt":
                self.n += 1
                if self.n == self.after and self.server is not None:
                    threading.Thread(target=self.server.stop, daemon=True).start()
        return evaluator_handler(body)


def run(tgt: ScriptedServer, other: ScriptedServer, data: Path, out: Path) -> Any:
    return invoke("--endpoint", tgt.base_url, "--model", "tgt", "--user-endpoint", other.base_url, "--user-model",
                  "sim", "--judge-endpoint", other.base_url, "--judge-model", "jdg", "--dataset", data, "--out", out,
                  "--conditions", "turn1,oracle,bc,nc", "--concurrency", "1", "--bootstrap-resamples", "100",
                  "--give-up-after", "600")


def headline(results: dict[str, Any]) -> Iterator[tuple[str, Optional[float], Optional[list[float]]]]:
    for cond, block in results["conditions"].items():
        for metric, b in block["bounds"].items():
            yield f"{cond}.{metric}", block.get(metric), b
    for name in ("recovery", "clarification_effect"):
        yield name, results[name]["value"], results[name]["bounds"]


def test_a_dead_target_run_has_bounds_that_hold_the_complete_run(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "data")
    with ScriptedServer(evaluator_handler, models=("sim", "jdg")) as other:
        with ScriptedServer(evaluator_handler, models=("tgt",)) as tgt:
            assert run(tgt, other, data, tmp_path / "whole").exit_code == 0
        dies = DiesAfter(after=10)
        dying = ScriptedServer(dies, models=("tgt",))
        dies.server = dying.start()
        result = run(dying, other, data, tmp_path / "part")
        dying.stop()
    assert result.exit_code == INCOMPLETE, result.output
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    part = json.loads((tmp_path / "part" / "results.json").read_text())
    assert "incomplete" in part["run"]["status"]
    unplayed = sum(b.get("n_unplayed", 0) for b in part["conditions"].values())
    assert unplayed > 0 and part["unscored"]["conversations_unplayed"] == unplayed
    truth = {name: value for name, value, _ in headline(whole)}
    checked = 0
    for name, value, b in headline(part):
        if truth.get(name) is None or name.endswith(".redundancy"):
            continue
        assert b is not None, name                    # a number of a condition never played still has bounds
        assert b[0] - 1e-9 <= truth[name] <= b[1] + 1e-9, (name, truth[name], b, value)
        checked += 1
    assert checked >= 20, checked
    wide = [name for name, _, b in headline(part) if b is not None and b[1] - b[0] > 1e-9]
    assert wide, "the conversations not played widen the bounds"
    table = (tmp_path / "part" / "table.md").read_text()
    assert "INCOMPLETE" in table and "§ bc:" in table and "§ nc:" in table    # what stands on part of the run
    row = next(line for line in table.splitlines() if line.startswith("| tgt |"))
    assert row.count("§") >= 5, row

    res = invoke("compare", tmp_path / "whole", tmp_path / "part", "--out", tmp_path / "cmp")
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "cmp" / "leaderboard.jsonl").read_text().splitlines()]
    groups = [r["comparability_group"] for r in rows]
    assert groups[0] != groups[1]                   # never ranked beside the complete run
    assert "incomplete" in rows[1]["status"]
    assert rows[1]["metrics"]["bc.utility"]["scored_share"] < 95.0    # its cells marked † on the page
    page = (tmp_path / "cmp" / "leaderboard.html").read_text()
    assert 'data-unranked="incomplete"' in page and "INCOMPLETE, not ranked" in page
