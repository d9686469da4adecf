"""The embedded model's engine: llama.cpp's own OpenAI-compatible HTTP server, from the prebuilt `xllamacpp`
wheel (CPython abi3, no compiler needed on x86-64 Linux; its CPU build uses no AVX-512 or AMX, so it runs on
any x86-64 machine with AVX2).

    python -m carryon_eval.model.engine --model FILE --alias NAME --port N [--chat-template-file FILE] ...

serves the model on 127.0.0.1 until it is killed. carryon_eval.model.local.LocalModelServer runs this module
as its child process (own process group, log file, parent-death signal), so that the evaluator owns the
process and sees it exit. This module is the only one that knows the engine: to swap it, change ``command``,
``serve`` and ``REQUIRED_MODULES`` here (and the [local] extra in pyproject.toml).

What the rest of the code relies on: ``GET /v1/models`` lists the alias; ``POST /v1/chat/completions`` answers
one request at a time (one slot of n_ctx tokens), honours ``seed``, ``temperature``, ``max_tokens``,
``logprobs``/``top_logprobs`` and ``response_format`` (json_schema and json_object with a schema);
``POST /apply-template`` renders a chat without generating (tests/model hold it byte-identical to the
prompt the model has always seen).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

ENGINE = "xllamacpp"
#: Modules the server needs at run time, and the distribution that brings each.
REQUIRED_MODULES = {"xllamacpp": "xllamacpp"}
#: Where no xllamacpp wheel fits (Linux aarch64 gets an old one, musl none): what to install instead.
NO_WHEEL_HINT = ("where pip finds no xllamacpp wheel for this machine (musl, or an old one on aarch64), build "
                 "llama.cpp's llama-server, serve Gemma 3 270M with it and pass --endpoint URL --model NAME "
                 "(docs/embedded-model.md)")


def command(*, model_path: Path, alias: str, port: int, n_ctx: int, n_threads: int, n_threads_batch: int,
            n_batch: int, chat_template_file: Optional[Path] = None, chat_template: Optional[str] = None,
            extra_args: Sequence[str] = ()) -> list[str]:
    """The child's command line: this module, run by the same interpreter."""
    cmd = [sys.executable, "-m", __name__, "--model", str(model_path), "--alias", alias,
           "--port", str(port), "--n-ctx", str(n_ctx), "--threads", str(n_threads),
           "--threads-batch", str(n_threads_batch), "--batch-size", str(n_batch)]
    if chat_template_file is not None:
        cmd += ["--chat-template-file", str(chat_template_file)]
    elif chat_template is not None:
        cmd += ["--chat-template", chat_template]
    return cmd + list(extra_args)


def serving(alias: str) -> str:
    """What the engine prints (to its log) once its socket is bound: how its parent knows its own server."""
    return f": serving {alias} at "


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python -m {__name__}", description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, type=Path, help="the GGUF file")
    ap.add_argument("--alias", required=True, help="the model id the server lists and answers to")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", required=True, type=int)
    ap.add_argument("--n-ctx", type=int, default=8192, help="context window of the one slot")
    ap.add_argument("--threads", type=int, default=1, help="generation threads")
    ap.add_argument("--threads-batch", type=int, default=2, help="prompt-processing threads")
    ap.add_argument("--batch-size", type=int, default=512, help="logical batch (prompt tokens per step)")
    tpl = ap.add_mutually_exclusive_group()
    tpl.add_argument("--chat-template-file", type=Path, help="a Jinja chat template (rendered by llama.cpp)")
    tpl.add_argument("--chat-template", help="one of llama.cpp's built-in chat templates by name, e.g. gemma")
    return ap


def serve(args: argparse.Namespace) -> None:
    """Start llama.cpp's server in this process (its HTTP threads are the engine's) and wait to be killed."""
    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = str(args.model)
    p.model_alias = {args.alias}
    p.hostnames = [args.host]
    p.port = args.port
    p.n_ctx = args.n_ctx
    p.n_parallel = 1            # one slot with the whole context: requests queue in the server, in order
    p.n_batch = args.batch_size
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads_batch
    if args.chat_template_file is not None:
        # Jinja, rendered by llama.cpp (add_generation_prompt is set); a leading BOS text is stripped and the
        # BOS token added once when the prompt is tokenized.
        p.use_jinja = True
        p.chat_template = args.chat_template_file.read_text(encoding="utf-8")
    elif args.chat_template is not None:
        p.use_jinja = False     # a built-in template by name (with use_jinja the name itself would be the template)
        p.chat_template = args.chat_template
    server = xllamacpp.Server(p)
    print(f"{ENGINE} {xllamacpp.__version__}{serving(args.alias)}{server.listening_address}", flush=True)
    while True:                 # the server's threads serve; SIGTERM / SIGKILL end the process
        time.sleep(3600)


def main(argv: Optional[list[str]] = None) -> int:
    serve(_parser().parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
