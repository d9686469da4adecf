"""`carryon-eval --dry-run`, `--price` and `--max-calls` against a scripted server (real HTTP).

The dry run's target and user counts are the calls a real run then makes, to the call; its judge count
is an upper bound that the real run reaches when no two replies are identical."""
from __future__ import annotations

import json

import re
from typing import Any

from click.testing import CliRunner
from support.eval_cli import table_calls
from support.rollout_data import evaluator_handler, unique_replies

from carryon_eval.cli import cli
from carryon_eval.run.folder import RunFolder


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def remote(srv: Any) -> list[Any]:
    return ["--endpoint", srv.base_url, "--model", "tgt", "--user-endpoint", srv.base_url, "--user-model", "sim",
            "--judge-endpoint", srv.base_url, "--judge-model", "jdg"]


def by_model(srv: Any, model: str) -> int:
    return srv.count(lambda body: body["model"] == model)


def test_dry_run_counts_are_the_calls_a_real_run_makes(scripted_server, dataset, tmp_path):
    srv = scripted_server(unique_replies, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    dry = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--dry-run", "--price", "judge=1/2")
    assert dry.exit_code == 0, dry.output
    assert srv.count() == 0 and not out.exists()                # nothing called, nothing written
    expected = table_calls(dry.stdout)
    assert expected["target"] > 0 and expected["user"] > 0 and expected["judge"] > 0
    assert "estimated cost:" in dry.stdout
    before = int(re.search(r"before dedupe[^:]*: ([\d,]+)", dry.stdout).group(1).replace(",", ""))
    assert before > expected["judge"]                           # the shared turn-1 reply is judged once

    real = invoke(*remote(srv), "--dataset", dataset, "--out", out)
    assert real.exit_code == 0, real.output
    assert table_calls(real.stdout) == expected                 # the same table, printed before the run
    assert by_model(srv, "tgt") == expected["target"]
    assert by_model(srv, "sim") == expected["user"]
    assert by_model(srv, "jdg") == expected["judge"]            # no two replies alike: the bound is reached


def test_dry_run_judge_count_is_an_upper_bound(scripted_server, dataset, tmp_path):
    srv = scripted_server(evaluator_handler, models=("tgt", "sim", "jdg"))   # replies may repeat
    out = tmp_path / "run"
    bound = table_calls(invoke(*remote(srv), "--dataset", dataset, "--out", out, "--dry-run").stdout)["judge"]
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out).exit_code == 0
    assert 0 < by_model(srv, "jdg") <= bound


def test_dry_run_of_a_resumed_run_counts_only_what_is_left(scripted_server, dataset, tmp_path):
    srv = scripted_server(unique_replies, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1").exit_code == 0
    assert invoke("rollout", out).exit_code == 0
    again = table_calls(invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1",
                               "--dry-run").stdout)
    assert again.get("target", 0) == 0 and again.get("user", 0) == 0     # every conversation is finished


def test_bad_price_is_one_error_line(scripted_server, dataset, tmp_path):
    srv = scripted_server(unique_replies, models=("tgt", "sim", "jdg"))
    result = invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "run", "--dry-run",
                    "--price", "judge=cheap")
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("carryon-eval: error: --price 'judge=cheap'")
    assert not (tmp_path / "run").exists()


def test_max_calls_stops_cleanly_and_a_rerun_resumes(scripted_server, dataset, tmp_path):
    srv = scripted_server(unique_replies, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    stopped = invoke(*remote(srv), "--dataset", dataset, "--out", out, "--max-calls", 7)
    assert stopped.exit_code == 4                                # incomplete, resumable: not bad input
    line = stopped.stderr.strip().splitlines()[-1]
    assert line == ("carryon-eval: --max-calls 7 reached; the run stopped cleanly; rerun the same command to "
                    "resume")
    assert srv.count() == 7
    assert json.loads((out / "results.json").read_text())["run"]["status"] == ["incomplete"]   # what there is
    finished = len(RunFolder(out).transcripts())

    srv.reset()
    done = invoke(*remote(srv), "--dataset", dataset, "--out", out)
    assert done.exit_code == 0, done.output
    assert len(RunFolder(out).transcripts()) > finished and (out / "results.json").is_file()
    fresh = scripted_server(unique_replies, models=("tgt", "sim", "jdg"))
    total = table_calls(invoke(*remote(fresh), "--dataset", dataset, "--out", tmp_path / "other",
                               "--dry-run").stdout)
    assert srv.count() + 7 == sum(total.values())              # no call was paid twice


def test_max_calls_on_the_rollout_and_judge_subcommands(scripted_server, dataset, tmp_path):
    srv = scripted_server(unique_replies, models=("tgt", "sim", "jdg"))
    out = tmp_path / "run"
    assert invoke(*remote(srv), "--dataset", dataset, "--out", out, "--conditions", "turn1", "--max-calls", 1,
                  ).exit_code == 4
    srv.reset()
    stopped = invoke("rollout", out, "--max-calls", 1)
    assert stopped.exit_code == 4 and "--max-calls 1 reached" in stopped.stderr and srv.count() == 1
    assert invoke("rollout", out).exit_code == 0
    srv.reset()
    judged = invoke("judge", out, "--max-calls", 2)
    assert judged.exit_code == 4 and "--max-calls 2 reached" in judged.stderr and srv.count() == 2


def test_the_dry_runs_json_reads_back_as_the_estimate_it_was(scripted_server, dataset, tmp_path):
    """`--dry-run --json` is an Estimate's JSON: read back, it writes the same object (its ``usd``, the prices' view
    of its rows, aside), its wings' keys (CarryOnBench's Ben-Util modes) kept, and its rows price to the same USD."""
    from carryon_eval.app.cost import Estimate, Price

    srv = scripted_server(unique_replies, models=("tgt", "sim", "jdg"))
    dry = invoke(*remote(srv), "--dataset", dataset, "--out", tmp_path / "run", "--dry-run", "--json",
                 "--price", "judge=1/2")
    assert dry.exit_code == 0, dry.output
    written = json.loads(dry.stdout)
    usd = written.pop("usd")
    back = Estimate.from_json(written)
    assert back.to_json() == written and json.dumps(back.to_json()) == json.dumps(written)    # the same key order
    wings = set(written) - {"conversations_to_run", "roles", "judge_by_scorer", "judge_records_before_dedupe",
                            "up_to", "note"}
    assert "utility_modes" in wings and set(back.notes[0].json) == wings
    assert back.calls("judge") > 0 and back.conversations == written["conversations_to_run"] > 0
    assert usd == {"judge": Price(1, 2).cost(back.total("judge"))}
