"""Progress without a terminal: `carryon-eval ... | cat` prints one progress line every N seconds while it runs."""
from __future__ import annotations

import re
import time

from helpers.eval_cli import remote, slowly, spawn
from helpers.rollout_data import evaluator_handler as handler

from carryon_eval.model.endpoint import ChatResult, UsageLedger
from carryon_eval.progress import Progress

LINE = re.compile(r"^(rollout|judge): (\d+)/(\d+) (conv|call) \(\d+%\), [0-9.]+ \w+/s, ETA \S+(, tokens .*)?$")


def test_a_piped_run_on_the_builtin_sample_prints_progress_lines_while_it_runs(scripted_server, tmp_path):
    srv = scripted_server(slowly(handler, 0.1), models=("tgt", "sim", "jdg"))
    proc = spawn(*remote(srv), "--limit", "2", "--out", tmp_path / "run", "--concurrency", "2",
                 "--progress-interval", "0.3", text=True)
    stamped: list[tuple[float, str]] = []
    assert proc.stdout is not None
    started = time.monotonic()
    for raw in proc.stdout:                      # read while the run goes on: lines arrive as it works
        stamped.append((time.monotonic() - started, raw.rstrip("\n")))
    proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    lines = [(t, text) for t, text in stamped if LINE.match(text)]
    rollout = [LINE.match(text) for _, text in lines if text.startswith("rollout:")]
    assert len(rollout) >= 2, [text for _, text in stamped]
    done = [int(m.group(2)) for m in rollout]
    totals = {int(m.group(3)) for m in rollout}
    assert done == sorted(done) and len(totals) == 1 and totals.pop() > 0
    assert any("tokens target=" in m.group(0) for m in rollout[1:])
    last_result = max(t for t, text in stamped if text.startswith("results:"))
    assert min(t for t, _ in lines) < last_result - 0.3      # printed during the run, not all at its end


def test_the_line_has_the_bars_numbers():
    usage = UsageLedger()
    usage.add("target", "m", ChatResult("a b", "stop", prompt_tokens=1200, completion_tokens=34, cached=False))
    bar = Progress(10, "rollout", usage=usage, initial=2, disable=True)
    bar.advance(3)
    line = bar.line()
    bar.close()
    assert line.startswith("rollout: 5/10 conv (50%), ") and "tokens target=1.2k" in line and LINE.match(line)


def test_the_judge_tail_after_the_rollout_prints_its_own_lines_in_a_pipe(scripted_server, tmp_path):
    """The rollout's line ends with the rollout; judging goes on (here: a slow judge) and says how it goes."""
    def slow_judge(body):
        return slowly(handler, 0.4)(body) if body["model"] == "jdg" else handler(body)
    srv = scripted_server(slow_judge, models=("tgt", "sim", "jdg"))
    proc = spawn(*remote(srv), "--limit", "1", "--conditions", "turn1", "--out", tmp_path / "run",
                 "--concurrency", "1", "--progress-interval", "0.3", text=True)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    judge_lines = [m for m in map(LINE.match, out.splitlines()) if m and m.group(1) == "judge"]
    assert len(judge_lines) >= 2, out
    assert all(m.group(4) == "call" for m in judge_lines)


def test_every_stage_is_counted_under_the_role_of_its_model():
    """The wings' scorers and probes name their stages freely; their calls count under the model's role."""
    from carryon_eval.progress import role_of

    assert {s: role_of(s) for s in ("judge_utility", "fidelity", "user_simulator", "target", "osi_helpfulness",
                                    "osi_harmfulness", "osi_assistance_level", "osi_intent_probe")} == {
        "judge_utility": "judge", "fidelity": "judge", "user_simulator": "user", "target": "target",
        "osi_helpfulness": "judge", "osi_harmfulness": "judge", "osi_assistance_level": "judge",
        "osi_intent_probe": "target"}
    from carryon_eval.inspect_bridge.export import role_of as inspect_role      # the inspect log's roles alike

    assert {s: inspect_role(s) for s in ("judge_utility", "fidelity", "user_simulator", "osi_intent_probe")} == {
        "judge_utility": "grader", "fidelity": "grader", "user_simulator": "user", "osi_intent_probe": "target"}
