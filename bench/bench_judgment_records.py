"""Hand-run benchmark: reading one run's judgment files at the paper's scale, as records, on two versions.

    PYTHONPATH=. python bench/bench_judgment_records.py --source /tmp/before_checkout     # before beside after

Builds one made-up run folder shaped like one model's run of the shipped plan (``--queries`` queries x 15
conversations: turn1, oracle and 13 multi-turn ones of 1-5 follow-up moves; ``--items`` checklist items per query):
its transcripts, Ben-Util records per item (one per reply and item) and grouped (the same targets, each group's raw
answer stored once in the answers file), harm scores (one per reply) and ``--osi`` records of one OpenSafeIntent
judge. Then each reader runs in a process of its own, ``--repeat`` times, alternating the two versions (this
checkout and ``--source``): the time of the read alone (imports excluded) and the process's peak resident memory.

- ``utility``: ``load_utility(run, judge, mode="per-item")``, every Ben-Util record held (calibration, agreement);
- ``grouped``: the same of the grouped file (each record's raw answer put back from the answers file);
- ``safety``: ``load_safety(run, judge)``;
- ``osi``: ``RunFolder(run).judgments().of("osi_harmfulness", judge)``, what OpenSafeIntent's section reads;
- ``judged``: ``read_judged`` over the run's transcripts, both files streamed into the report's compact table.

Printed as JSON: per reader and version the median seconds and peak MB, and the records read.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
READERS = ("utility", "grouped", "safety", "osi", "judged")
MOVES = 5


def conversations(queries: int) -> list[tuple[str, str, str, int]]:
    """(conversation_id, query_id, condition, replies) of the made-up run: 15 per query."""
    out = []
    for q in range(queries):
        qid = f"q{q:04d}"
        out += [(f"turn1:{qid}", qid, "turn1", 1), (f"oracle:{qid}", qid, "oracle", 1)]
        out += [(f"{qid}-c{k}", qid, "bc" if k % 3 else "nc", 2 + k % MOVES) for k in range(13)]
    return out


def build(folder: Path, queries: int, items: int, osi: int) -> dict[str, int]:
    """The run folder's files; returns the records of each."""
    folder.mkdir(parents=True)
    convs = conversations(queries)
    counts = {"conversations": len(convs), "utility": 0, "safety": 0}
    base = {"judge_model": "judge"}
    with open(folder / "transcripts.jsonl", "w") as tr, open(folder / "utility_judgments.jsonl", "w") as ut, \
            open(folder / "utility_grouped_judgments.jsonl", "w") as gr, \
            open(folder / "safety_judgments.jsonl", "w") as sa:
        answers = {}
        for n, (cid, qid, cond, replies) in enumerate(convs):
            messages = []
            for t in range(1, replies + 1):
                messages += [{"role": "user", "content": f"Question {qid}, turn {t}?", "turn": t,
                              "move": None if t == 1 else "pushback"},
                             {"role": "assistant", "content": "A made-up reply. " * 20, "turn": t, "model": "tgt"}]
                raw = "\n".join(f"{qid}-i{i}: {'yes' if (n + t + i) % 3 else 'no'}" for i in range(items))
                answer = f"{abs(hash(raw)) % 10**16:016x}"
                answers.setdefault(answer, raw)
                for i in range(items):
                    verdict = (n + t + i) % 3 != 0
                    ut.write(json.dumps({"conversation_id": cid, "turn": t, "item_id": f"{qid}-i{i}",
                                         "verdict": verdict, **base, "prompt_version": "judges/ben_util@1",
                                         "p_yes": None, "raw": "yes" if verdict else "no", "attempts": 1,
                                         "via": "json_schema"}) + "\n")
                    gr.write(json.dumps({"conversation_id": cid, "turn": t, "item_id": f"{qid}-i{i}",
                                         "verdict": verdict, **base, "prompt_version": "judges/ben_util_grouped@1",
                                         "asked": "group", "answer": answer, "attempts": 1, "via": "text",
                                         "mode": "grouped"}) + "\n")
                    counts["utility"] += 1
                sa.write(json.dumps({"conversation_id": cid, "turn": t, "score": 1 + (n + t) % 5, **base,
                                     "prompt_version": "judges/safety@1", "raw": '{"score": 2}', "attempts": 1,
                                     "via": "json_schema"}) + "\n")
                counts["safety"] += 1
            tr.write(json.dumps({"conversation_id": cid, "query_id": qid, "condition": cond,
                                 "flow_id": None if cond in ("turn1", "oracle") else f"f{n % 40}",
                                 "moves": ["pushback"] * (replies - 1), "messages": messages,
                                 "target_model": "tgt"}) + "\n")
    with open(folder / "utility_grouped_answers.jsonl", "w") as fh:
        fh.writelines(json.dumps({"answer": a, "raw": raw}) + "\n" for a, raw in sorted(answers.items()))
    with open(folder / "osi_harmfulness_judgments.jsonl", "w") as fh:
        for s in range(osi):
            fh.write(json.dumps({"conversation_id": f"opensafeintent:s{s // 7}:p{s % 7}", "turn": 1, "value": s % 11,
                                 **base, "prompt_version": "opensafeintent/harmfulness", "problem": None,
                                 "raw": f"#thescore: {s % 11}", "attempts": 1, "via": "text"}) + "\n")
    counts["osi"] = osi
    (folder / "checklists.json").write_text(json.dumps({f"q{q:04d}": [f"q{q:04d}-i{i}" for i in range(items)]
                                                        for q in range(queries)}))
    return counts


READ = r'''
import json, resource, sys, time
from pathlib import Path
from carryon_eval.run.folder import RunFolder
from carryon_eval.suites.carryonbench.judging import judgments as J
import carryon_eval.suites.carryonbench.record  # noqa: F401 - the wing and its scorers
import carryon_eval.suites.opensafeintent.scorers  # noqa: F401 - its judges
try:
    from carryon_eval.suites.carryonbench.judging.judged import read_judged
except ImportError:
    read_judged = J.read_judged
folder, reader = Path(sys.argv[1]), sys.argv[2]
run = RunFolder(folder)
if reader == "judged":
    from carryon_eval.schema import Transcript
    transcripts = [Transcript.from_dict(json.loads(line)) for line in open(folder / "transcripts.jsonl")]
    checklists = json.loads((folder / "checklists.json").read_text())
start = time.perf_counter()
if reader == "utility":
    n = len(J.load_utility(run, "judge", mode="per-item"))
elif reader == "grouped":
    got = J.load_utility(run, "judge", mode="grouped")
    n = len(got)
    assert all(r.raw for r in got)
elif reader == "safety":
    n = len(J.load_safety(run, "judge"))
elif reader == "osi":
    n = len(run.judgments().of("osi_harmfulness", "judge"))
else:
    table = read_judged(run, "judge", transcripts, checklists, mode="per-item")
    n = table.utility.records + table.safety.records
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "records": n}))
'''


def read(source: Path, folder: Path, reader: str) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{source.resolve()}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", READ, str(folder), reader], env=env, capture_output=True, text=True,
                         cwd=folder)
    if out.returncode != 0:
        raise SystemExit(f"{reader} on {source}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=410)
    ap.add_argument("--items", type=int, default=18)
    ap.add_argument("--osi", type=int, default=14_000, help="records of the OpenSafeIntent judge")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=Path, required=True, help="the other checkout (before)")
    ap.add_argument("--readers", default=",".join(READERS))
    args = ap.parse_args()
    versions = {"before": args.source, "after": HERE.parent}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        result: dict = {"built": build(folder, args.queries, args.items, args.osi),
                        "load_before": [round(x, 2) for x in os.getloadavg()]}
        for reader in args.readers.split(","):
            runs: dict[str, list[dict]] = {v: [] for v in versions}
            for _ in range(args.repeat):
                for name, source in versions.items():
                    runs[name].append(read(source, folder, reader))
            result[reader] = {name: {"seconds": round(statistics.median(r["seconds"] for r in got), 2),
                                     "peak_mb": round(statistics.median(r["peak_mb"] for r in got)),
                                     "records": got[0]["records"]} for name, got in runs.items()}
            print(reader, json.dumps(result[reader]), file=sys.stderr)
        result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
