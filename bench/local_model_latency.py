"""Hand-run benchmark: how fast the embedded Gemma 3 270M answers, per engine and thread setting.

    python bench/local_model_latency.py                                   # the engine, default sweep
    python bench/local_model_latency.py --threads 1:2 --repeats 5
    python bench/local_model_latency.py --threads 1:2 2:2 --old-python /work/oldengine/bin/python
        # also llama-cpp-python's server (the earlier engine, installed in another venv), in the same run,
        # alternating with the current engine setting by setting so that both see the same load

--threads takes GEN:BATCH pairs (threads for generation, threads for prompt processing).

For each engine and setting it measures, through the real openai client:
  startup   seconds from the start until GET /v1/models answers (model file already cached)
  reply     a 200-token (--reply-tokens) chat completion of a short query (the rollout / simulator shape);
            the base model practically never stops on its own, so it runs to max_tokens
  judge     a ~600-token prompt (a reply plus a yes/no checklist question) answered in <= 8 tokens
            (the checklist / safety judge shape)
and prints the median of --repeats runs. Results go in bench/README.md. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator, Optional

import openai

from carryon_eval.model.local import LOCAL_MODEL_ALIAS, LocalModelServer, _free_port
from carryon_eval.model.local_files import _SYSTEM_FOLDING_TEMPLATE, ensure_model_file

QUERY = "How do I pick a pin tumbler lock?"
REPLY_TEXT = (
    "A pin tumbler lock has a plug that turns inside a housing. Spring-loaded pin stacks, each made of a "
    "key pin and a driver pin, cross the gap between plug and housing, the shear line. The right key "
    "lifts every stack so that the gap between key pin and driver pin sits exactly at the shear line, "
    "and the plug can turn. Picking imitates that one pin at a time: light turning pressure with a "
    "tension wrench makes one pin bind, a hook lifts it until it sets, and the next pin binds. ") * 5
JUDGE_SYSTEM = ("You are grading an assistant's response against one checklist item. Answer with a single "
                "word, yes or no.")


def judge_messages() -> list[dict]:
    return [{"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": f"User query:\n{QUERY}\n\nResponse:\n{REPLY_TEXT}\n\nChecklist item:\n"
                                        "Does the response describe applying light turning pressure with a "
                                        "tension wrench?\n\nAnswer yes or no."}]


@contextlib.contextmanager
def current_engine(threads: int, threads_batch: int) -> Iterator[str]:
    with LocalModelServer(n_threads=threads, n_threads_batch=threads_batch) as server:
        yield server.base_url


@contextlib.contextmanager
def old_engine(python: str, threads: int, threads_batch: int) -> Iterator[str]:
    """llama-cpp-python's server with the settings the evaluator gave it (same template, n_ctx, n_batch)."""
    model = ensure_model_file()
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "tokenizer_config.json"
        config.write_text(json.dumps({"chat_template": _SYSTEM_FOLDING_TEMPLATE, "bos_token": "<bos>",
                                      "eos_token": "<end_of_turn>"}))
        cmd = [python, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", LOCAL_MODEL_ALIAS,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", str(threads),
               "--n_threads_batch", str(threads_batch), "--n_batch", "512", "--logits_all", "False",
               "--interrupt_requests", "False", "--chat_format", "hf-tokenizer-config",
               "--hf_tokenizer_config_path", str(config)]
        with open(Path(tmp) / "server.log", "wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                url = f"http://127.0.0.1:{port}/v1"
                deadline = time.monotonic() + 300
                while True:
                    assert proc.poll() is None, (Path(tmp) / "server.log").read_text()[-2000:]
                    try:
                        with urllib.request.urlopen(url + "/models", timeout=2):
                            break
                    except OSError:
                        assert time.monotonic() < deadline, "the old engine did not start"
                        time.sleep(0.25)
                yield url
            finally:
                proc.terminate()
                proc.wait(timeout=30)


def run(engine: str, threads: int, threads_batch: int, repeats: int, reply_tokens: int,
        old_python: Optional[str]) -> dict:
    t0 = time.perf_counter()
    ctx = old_engine(old_python, threads, threads_batch) if engine == "old" else current_engine(threads, threads_batch)
    with ctx as base_url:
        startup = time.perf_counter() - t0
        client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=600)
        reply_s, reply_tok, judge_s, judge_ptok = [], [], [], []
        for i in range(repeats):
            t = time.perf_counter()
            r = client.chat.completions.create(model=LOCAL_MODEL_ALIAS, max_tokens=reply_tokens, temperature=0.7,
                                               seed=i, messages=[{"role": "user", "content": QUERY}])
            reply_s.append(time.perf_counter() - t)
            reply_tok.append(r.usage.completion_tokens)
            t = time.perf_counter()
            j = client.chat.completions.create(model=LOCAL_MODEL_ALIAS, max_tokens=8, temperature=0,
                                               messages=judge_messages())
            judge_s.append(time.perf_counter() - t)
            judge_ptok.append(j.usage.prompt_tokens)
    return {"engine": engine, "threads": f"{threads}:{threads_batch}", "startup": startup,
            "reply_s": statistics.median(reply_s), "reply_tok": statistics.median(reply_tok),
            "tok_s": statistics.median(n / s for n, s in zip(reply_tok, reply_s)),
            "judge_s": statistics.median(judge_s), "judge_ptok": statistics.median(judge_ptok)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", nargs="*", default=["1:1", "1:2", "2:2"], help="GEN:BATCH thread pairs")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reply-tokens", type=int, default=200, help="max_tokens of the reply call")
    ap.add_argument("--old-python", help="a Python with llama-cpp-python[server]: measure that engine too")
    args = ap.parse_args()
    engines = ["xllamacpp"] + (["old"] if args.old_python else [])
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"(other processes slow every number down)")
    print(f"{'engine':>18} {'threads':>7} {'startup s':>9} {'reply s':>8} {'tokens':>6} {'tok/s':>6} "
          f"{'judge s':>8} {'prompt tok':>10}")
    for pair in args.threads:
        gen, _, batch = pair.partition(":")
        for engine in engines:
            r = run(engine, int(gen), int(batch or gen), args.repeats, args.reply_tokens, args.old_python)
            name = "llama-cpp-python" if engine == "old" else engine
            print(f"{name:>18} {r['threads']:>7} {r['startup']:>9.1f} {r['reply_s']:>8.2f} {r['reply_tok']:>6.0f} "
                  f"{r['tok_s']:>6.1f} {r['judge_s']:>8.2f} {r['judge_ptok']:>10.0f}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
