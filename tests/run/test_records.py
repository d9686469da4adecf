"""run.json and judge.json read back as records and written again: byte for byte what was read."""
import json
from pathlib import Path

import carryon_eval.app.commands  # noqa: F401  (the wings register their judge settings)
from carryon_eval.run.folder import Failure, UsageFile
from carryon_eval.schema import JudgeAnswer as Answer, Transcript
from carryon_eval.run.records import FileStamp, JudgeSummary, RoleRecord, RunMeta

FIXTURE = Path(__file__).parents[1] / "fixtures" / "run_v0_1_0"


def _again(cls, d):
    return json.dumps(cls.from_json(d).to_json())


def test_a_run_json_of_every_part_is_written_back_as_read():
    d = json.loads((FIXTURE / "run.json").read_text(encoding="utf-8"))
    d["roles"]["target"].update(pool=["http://a/v1", "http://b/v1"], temperature=0, sent={"max_tokens": "as x"},
                                extra_body={"a": {"b": 1}})
    d.update(subset="pilot", bootstrap={"n_resamples": 10, "seed": 1}, suites={"o": {"files": ["q.jsonl"]}},
             usage={"target": {"calls": 3}}, sweep={"plan": "p.json", "index": 0}, own_block={"x": 1},
             no_user_turns=True)
    once = RunMeta.from_json(d).to_json()
    assert _again(RunMeta, once) == json.dumps(once)
    assert list(once["roles"]["target"]) == ["base_url", "model", "api_key_env", "concurrency", "timeout", "max_retries",
                                             "http_client", "local", "pool", "temperature", "extra_body", "sent"]
    assert list(once)[-3:] == ["sweep", "own_block", "no_user_turns"]
    meta = RunMeta.from_json(d)
    assert meta.role("target").pool == ("http://a/v1", "http://b/v1") and meta.extras == {"own_block": {"x": 1}}


def test_a_null_in_run_json_reads_as_the_default():
    role = RoleRecord.from_json({"model": "m", "base_url": None, "temperature": None, "pool": None})
    assert role == RoleRecord(model="m") and role.to_json() == RoleRecord(model="m").to_json()
    meta = RunMeta.from_json({"roles": {"user": None}, "notice": ["a", "b"], "conditions": None, "usage": [1]})
    assert meta.role("user") == RoleRecord() and meta.notice == "a b" and meta.conditions == [] and meta.usage == {}


def test_a_judge_json_is_written_back_as_read_and_its_file_stamps_are_records():
    d = json.loads((FIXTURE / "judge.json").read_text(encoding="utf-8"))
    once = JudgeSummary.from_json(d).to_json()
    assert _again(JudgeSummary, once) == json.dumps(once)
    d["files"] = {"utility_judgments.jsonl": {"judges": ["j"], "bytes": 10, "mtime_ns": 5},
                  "bad.jsonl": {"judges": "j", "bytes": 1}}
    summary = JudgeSummary.from_json(d)
    assert summary.files == {"utility_judgments.jsonl": FileStamp(["j"], 10, 5)}
    assert JudgeSummary.from_json(summary.to_json()).to_json() == summary.to_json()


def test_the_small_run_files_lines_are_records():
    for cls, d in ((Failure, {"conversation_id": "c1", "reason": "timeout"}), (Answer, {"answer": "ab12", "raw": "Yes"}),
                   (UsageFile, {"schema_version": 1, "usage": {"target/m": {"calls": 2, "prompt_tokens": 40}}})):
        assert _again(cls, d) == json.dumps(d)


def test_a_transcript_is_written_back_as_read():
    d = {"conversation_id": "c1", "query_id": "q1", "condition": "bc", "flow_id": "f1", "moves": ["ask"],
         "messages": [{"role": "user", "content": "Hi", "turn": 1, "move": None, "model": None, "prompt_version": None},
                      {"role": "assistant", "content": "Hello", "turn": 1, "move": None, "model": "m",
                       "prompt_version": None}],
         "target_model": "m", "shared_turn1": True, "meta": {"user_model": "u"}}
    assert json.dumps(Transcript.from_dict(d).to_dict()) == json.dumps(d)
    assert Transcript.from_dict(d).messages[1].content == "Hello"


def test_the_sweep_and_the_bootstrap_of_run_json_are_records():
    from carryon_eval.app.config import BootstrapChoice
    from carryon_eval.run.records import BootstrapRef, SweepRef

    sweep = {"plan": "plan.toml", "plan_sha256": "ab", "targets": 3, "target": "m1", "index": 2}
    meta = RunMeta.from_json({"sweep": sweep, "bootstrap": {"n_resamples": 200, "seed": 7}})
    assert meta.sweep == SweepRef("plan.toml", "ab", 3, "m1", 2) and meta.to_json()["sweep"] == sweep
    assert meta.bootstrap == BootstrapRef(200, 7) and BootstrapChoice().resolve(meta) == (200, 7)
    older = RunMeta.from_json({"bootstrap": {"n_resamples": 200}})      # a key the file lacks: the default seed
    assert older.to_json()["bootstrap"] == {"n_resamples": 200} and BootstrapChoice(seed=3).resolve(older) == (200, 3)
