"""Hand-run benchmark: how fast the embedded Gemma 3 270M answers through LocalModelServer.

    /work/venv/bin/python bench/local_model_latency.py                  # the default sweep
    /work/venv/bin/python bench/local_model_latency.py --threads 1:2 --logits-all off --repeats 5

--threads takes GEN:BATCH pairs (n_threads for generation, n_threads_batch for prompt processing).

For each server setting it measures, through the real openai client:
  startup   seconds from start() until GET /v1/models answers (model file already cached)
  reply     a 200-token (--reply-tokens) chat completion of a short query (the rollout / simulator shape);
            the base model practically never stops on its own, so it runs to max_tokens
  judge     a ~700-token prompt (a reply plus a yes/no checklist question) answered in <= 8 tokens
            (the checklist / safety judge shape)
and prints the median of --repeats runs. Results go in bench/README.md. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import openai

from carryon_eval.model.local import LocalModelServer

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


def run(threads: int, threads_batch: int, logits_all: bool, repeats: int, reply_tokens: int = 200) -> dict:
    t0 = time.perf_counter()
    with LocalModelServer(n_threads=threads, n_threads_batch=threads_batch, logits_all=logits_all) as server:
        startup = time.perf_counter() - t0
        client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=600)
        reply_s, reply_tok, judge_s, judge_ptok = [], [], [], []
        for _ in range(repeats):
            t = time.perf_counter()
            r = client.chat.completions.create(model=server.model, max_tokens=reply_tokens, temperature=0.7,
                                               messages=[{"role": "user", "content": QUERY}])
            reply_s.append(time.perf_counter() - t)
            reply_tok.append(r.usage.completion_tokens)
            t = time.perf_counter()
            j = client.chat.completions.create(model=server.model, max_tokens=8, temperature=0,
                                               messages=judge_messages())
            judge_s.append(time.perf_counter() - t)
            judge_ptok.append(j.usage.prompt_tokens)
    return {"threads": f"{threads}:{threads_batch}", "logits_all": logits_all, "startup": startup,
            "reply_s": statistics.median(reply_s), "reply_tok": statistics.median(reply_tok),
            "judge_s": statistics.median(judge_s), "judge_ptok": statistics.median(judge_ptok)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", nargs="*", default=["1:1", "1:2", "2:2"], help="GEN:BATCH thread pairs")
    ap.add_argument("--logits-all", choices=["on", "off", "both"], default="both")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reply-tokens", type=int, default=200, help="max_tokens of the reply call")
    args = ap.parse_args()
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.logits_all]
    print(f"load average before: {os.getloadavg()[0]:.2f} (other processes slow every number down)")
    print(f"{'threads gen:batch':>17} {'logits_all':>10} {'startup s':>9} {'reply s':>8} {'tokens':>6} {'tok/s':>6} "
          f"{'judge s':>8} {'prompt tok':>10}")
    for pair in args.threads:
        gen, _, batch = pair.partition(":")
        for la in modes:
            r = run(int(gen), int(batch or gen), la, args.repeats, args.reply_tokens)
            print(f"{r['threads']:>17} {str(r['logits_all']):>10} {r['startup']:>9.1f} {r['reply_s']:>8.2f} "
                  f"{r['reply_tok']:>6.0f} {r['reply_tok'] / r['reply_s']:>6.1f} {r['judge_s']:>8.2f} "
                  f"{r['judge_ptok']:>10.0f}", flush=True)


if __name__ == "__main__":
    main()
