"""`carryon-eval`: rollout -> judge -> report against any OpenAI-compatible endpoint.

    carryon-eval --endpoint URL --model NAME [--dataset DIR_OR_HUB_ID] [--out RUNDIR] ...
    carryon-eval rollout RUNDIR        continue the rollout of a run folder (settings from its run.json)
    carryon-eval fidelity RUNDIR       move-fidelity check of the simulated user turns
    carryon-eval judge RUNDIR          (re-)judge; only what is not cached is asked
    carryon-eval report RUNDIR         results.json, table.md, plots, report.html
    carryon-eval compare / agreement

Without --endpoint (or with `--endpoint local`) every role whose endpoint is not given runs on the
embedded Gemma 3 270M (a smoke test, not a measurement). Bad input (dataset, endpoint, run folder)
ends with one line `carryon-eval: error: ...` on stderr and exit code 2, before any generation.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import click

from . import __version__
from .agreement import agreement_command
from .cache import ResponseCache
from .compare import compare_command
from .client import Endpoint, EndpointConfig, EndpointError, UsageLedger
from .dataset import Benchmark, DatasetError, load_benchmark
from .judge import MAX_TOKENS as JUDGE_MAX_TOKENS, JudgeError, run_judge
from .judgments import judges_present
from .local_model import LOCAL_ENDPOINT as LOCAL
# LOCAL_MAX_TOKENS: token caps for roles on the embedded model. A 270M base model rarely stops by itself, so
# without caps a smoke run spends its time writing to max_tokens; an explicit --max-tokens / --judge-max-tokens wins.
from .local_model import (LOCAL_MAX_TOKENS, LOCAL_MODEL_ALIAS, LOCAL_MODEL_NOTICE, LocalModelError, LocalModelServer,
                          is_local)
from .progress import Progress, human, tokens_by_role
from .prompts import PromptError, load_prompt, prompt_hashes
from .report import write_report
from .rollout import ORACLE_PROMPT, Generation, plan, rollout
from .run import RunError, RunFolder, write_json_atomic
from .schema import CONDITIONS
from .fidelity import check_fidelity
from .simulator import MAX_TOKENS as USER_MAX_TOKENS, TEMPERATURE as USER_TEMPERATURE, UserSimulator

ROLES = ("target", "user", "judge")

SAMPLE = "builtin:sample"          # run.json's dataset source when --dataset is not given
FIDELITY_FILE = "fidelity.json"


class CliError(click.ClickException):
    """One line on stderr, `carryon-eval: error: ...`, then exit `code` (2 = bad input)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file: Any = None) -> None:
        first = str(self.message).strip().splitlines()[0] if str(self.message).strip() else "failed"
        click.echo(f"carryon-eval: error: {first}", err=True)


@contextlib.contextmanager
def errors_as_cli(resume_hint: bool = False):
    """Turn the package's one-line errors into CliError; Ctrl-C into a short note and exit 130."""
    try:
        yield
    except (DatasetError, RunError, PromptError, LocalModelError, JudgeError) as exc:
        raise CliError(str(exc)) from None
    except EndpointError as exc:
        hint = "; rerun the same command to resume" if resume_hint else ""
        raise CliError(f"{exc}{hint}") from None
    except KeyboardInterrupt:
        click.echo("carryon-eval: interrupted; rerun the same command to resume", err=True)
        sys.exit(130)


# ---------------------------------------------------------------- roles and settings
def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "run"


def default_out(model: str, dataset: Optional[str], limit: Optional[int] = None) -> Path:
    """Same command, same folder, so that rerunning a command resumes it."""
    name = "sample" if dataset is None else Path(dataset.rstrip("/")).name
    return Path("carryon-runs") / f"{_slug(model)}__{_slug(name)}{f'__limit{limit}' if limit else ''}"


def load_bench(source: Optional[str], revision: Optional[str], limit: Optional[int]) -> Benchmark:
    bench = load_benchmark(None if source in (None, SAMPLE) else source, revision)
    return bench.limited(limit)


def role_config(public: dict[str, Any], *, base_url: Optional[str] = None, concurrency: Optional[int] = None,
                api_key_env: Optional[str] = None) -> EndpointConfig:
    """An EndpointConfig from run.json's role entry, with optional overrides."""
    return EndpointConfig(base_url=base_url or public["base_url"], model=public["model"],
                          api_key_env=api_key_env or public.get("api_key_env") or "OPENAI_API_KEY",
                          concurrency=concurrency or public.get("concurrency") or 8,
                          timeout=public.get("timeout") or 120.0, max_retries=public.get("max_retries") or 6)


class LocalServer:
    """Starts the embedded model when a role first needs it; the ExitStack stops it on any exit."""

    def __init__(self, stack: contextlib.ExitStack, logprobs: bool = False) -> None:
        self.stack = stack
        self.logprobs = logprobs          # the logprob utility mode needs llama.cpp's logits_all
        self.server: Optional[LocalModelServer] = None

    def get(self) -> LocalModelServer:
        if self.server is None:
            click.echo("starting the embedded model (Gemma 3 270M via llama.cpp) ...", err=True)
            self.server = self.stack.enter_context(LocalModelServer(logits_all=self.logprobs))
        return self.server


def public_roles(configs: dict[str, EndpointConfig], local: set[str]) -> dict[str, dict[str, Any]]:
    return {role: {**cfg.public(), "local": role in local} for role, cfg in configs.items()}


def endpoints(configs: dict[str, EndpointConfig], run: RunFolder, usage: UsageLedger) -> dict[str, Endpoint]:
    cache = ResponseCache(run.cache_dir)
    return {role: Endpoint(cfg, cache=cache, usage=usage) for role, cfg in configs.items()}


async def check_all(eps: dict[str, Endpoint]) -> None:
    """Every role's endpoint answers and serves its model; one check per distinct (URL, model)."""
    seen: dict[tuple[str, str], Endpoint] = {}
    for ep in eps.values():
        seen.setdefault((ep.config.base_url, ep.config.model), ep)
    results = await asyncio.gather(*(ep.check() for ep in seen.values()), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r


async def close_all(eps: dict[str, Endpoint]) -> None:
    for ep in eps.values():
        await ep.aclose()


def print_usage(usage: UsageLedger) -> None:
    tokens = tokens_by_role(usage)
    if tokens:
        click.echo("tokens: " + ", ".join(f"{role} {human(n)}" for role, n in tokens.items()))


# ---------------------------------------------------------------- phases
async def rollout_phase(bench: Benchmark, run: RunFolder, meta: dict[str, Any], eps: dict[str, Endpoint],
                        concurrency: int, *, checked: bool = False) -> None:
    try:
        if not checked:
            await check_all(eps)
        gen = Generation(**meta["generation"]["target"])
        simulator = UserSimulator(eps["user"], temperature=meta["generation"]["user"]["temperature"],
                                  max_tokens=meta["generation"]["user"]["max_tokens"])
        summary = await rollout(bench, run, eps["target"], simulator, conditions=meta["conditions"], gen=gen,
                                shared_turn1=meta["shared_turn1"], concurrency=concurrency)
    finally:
        await close_all(eps)
    click.echo(f"rollout: {summary.finished}/{summary.total} conversations in {run.transcripts_file} "
               f"({summary.new} new)")
    skipped = meta.get("skipped") or []
    if skipped:
        click.echo(f"rollout: {len(skipped)} conversation(s) skipped (listed in run.json 'skipped'): "
                   f"{skipped[0]['reason']}")
    failures = run.failures()
    if failures:
        click.echo(f"rollout: {len(failures)} conversation(s) failed (see {run.failures_file}; "
                   "a rerun tries them again)")


async def fidelity_phase(bench: Benchmark, run: RunFolder, judge: Endpoint, concurrency: int) -> dict[str, Any]:
    transcripts = run.transcripts()
    n = sum(1 for t in transcripts for m in t.messages if m.role == "user" and m.move)
    try:
        with Progress(n, "fidelity", usage=judge.usage, unit="turn") as bar:
            result = await check_fidelity(transcripts, bench.queries, judge, concurrency=concurrency, progress=bar)
    finally:
        await judge.aclose()
    write_json_atomic(run.path / FIDELITY_FILE, result)
    agree = result["agreement"]
    leak = result["intent_leak"]
    click.echo(f"fidelity: {result['n_turns']} user turns, move agreement "
               f"{'n/a' if agree is None else f'{agree:.0%}'}; NC intent leaks {leak['n_leaks']}/{leak['n_checked']} "
               f"-> {run.path / FIDELITY_FILE}")
    return result


def judge_phase(bench: Benchmark, run: RunFolder, judge: Endpoint, utility_mode: str, concurrency: int,
                max_tokens: int = JUDGE_MAX_TOKENS) -> None:
    summary = run_judge(run.path, bench, judge, utility_mode=utility_mode, concurrency=concurrency,
                        max_tokens=max_tokens)
    u, s = summary["utility"], summary["safety"]
    click.echo(f"judge ({summary['judge_model']}): {u['records_written']}/{u['records_total']} utility verdicts "
               f"({u['unscored']} unscored), {s['records_written']}/{s['records_total']} safety scores "
               f"({s['unscored']} unscored)")
    if not summary["complete"]:
        click.echo("judge: some judgments are missing after failed calls; `carryon-eval judge "
                   f"{run.path}` asks for them again", err=True)


def report_phase(bench: Benchmark, run: RunFolder, judge: Optional[str] = None) -> None:
    write_report(run.path, bench, judge=judge)
    click.echo(f"results: {run.path / 'results.json'}")
    click.echo(f"report:  {run.path / 'report.html'}")


# ---------------------------------------------------------------- the main command
def _conditions(ctx: click.Context, param: click.Parameter, value: str) -> list[str]:
    items = [c.strip().lower() for c in value.split(",") if c.strip()]
    bad = [c for c in items if c not in CONDITIONS]
    if bad or not items:
        raise click.BadParameter(f"expected a comma-separated subset of {','.join(CONDITIONS)}, got {value!r}")
    return [c for c in CONDITIONS if c in items]


UTILITY_MODE_CHOICES = ("text", "logprob", "logprobs")


def _utility_mode(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    return "logprobs" if value == "logprob" else value


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--endpoint", help="Target model's OpenAI-compatible base URL (…/v1); 'local' or none: embedded model.")
@click.option("--model", help="Target model name (required with an endpoint URL).")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the target endpoint's API key (default for the other roles too).")
@click.option("--user-endpoint", help="User simulator endpoint [default: the target's].")
@click.option("--user-model", help="User simulator model [default: the target's].")
@click.option("--user-api-key-env", help="API key variable for the user simulator [default: --api-key-env].")
@click.option("--judge-endpoint", help="Judge endpoint [default: the target's].")
@click.option("--judge-model", help="Judge model [default: the target's].")
@click.option("--judge-api-key-env", help="API key variable for the judge [default: --api-key-env].")
@click.option("--dataset", help="Dataset folder or Hub id [default: the built-in sample].")
@click.option("--revision", help="Dataset revision (Hub).")
@click.option("--out", type=click.Path(path_type=Path),
              help="Run folder [default: carryon-runs/<model>__<dataset>]; rerunning into it resumes.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries, with all their conversations.")
@click.option("--conditions", default=",".join(CONDITIONS), show_default=True, callback=_conditions,
              help="Comma-separated conditions to run.")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
              help="Conversations (and requests per endpoint) in flight.")
@click.option("--max-tokens", type=click.IntRange(min=1),
              help=f"Target reply max tokens [default: 1024; {LOCAL_MAX_TOKENS['target']} on the embedded model].")
@click.option("--judge-max-tokens", type=click.IntRange(min=1),
              help=f"Judge answer max tokens, text mode [default: {JUDGE_MAX_TOKENS}; "
                   f"{LOCAL_MAX_TOKENS['judge']} on the embedded model].")
@click.option("--temperature", type=float, default=0.0, show_default=True, help="Target temperature.")
@click.option("--seed", type=int, default=0, show_default=True, help="Base seed of target and user simulator calls.")
@click.option("--no-shared-turn1", is_flag=True,
              help="Generate the first reply of every bc/nc conversation separately (default: one turn-1 reply "
                   "per query, shared).")
@click.option("--fidelity", is_flag=True, help="Also run the move-fidelity check (fidelity.json).")
@click.option("--utility-mode", type=click.Choice(UTILITY_MODE_CHOICES), default="text", show_default=True,
              callback=_utility_mode, help="How the utility judge answers: yes/no text, or P(yes) from logprobs.")
@click.version_option(__version__, prog_name="carryon-eval")
@click.pass_context
def cli(ctx: click.Context, **opts: Any) -> None:
    """CarryOnBench evaluator: rollout, judge and report in one go (or one phase at a time with the subcommands)."""
    if ctx.invoked_subcommand is not None:
        return
    evaluate(**opts)


def evaluate(*, endpoint: Optional[str], model: Optional[str], api_key_env: str, user_endpoint: Optional[str],
             user_model: Optional[str], user_api_key_env: Optional[str], judge_endpoint: Optional[str],
             judge_model: Optional[str], judge_api_key_env: Optional[str], dataset: Optional[str],
             revision: Optional[str], out: Optional[Path], limit: Optional[int], conditions: Sequence[str],
             concurrency: int, max_tokens: Optional[int], judge_max_tokens: Optional[int], temperature: float,
             seed: int, no_shared_turn1: bool, fidelity: bool, utility_mode: str) -> None:
    # Which roles are remote (URL, model, key variable) and which run on the embedded model.
    specs: dict[str, tuple[Optional[str], Optional[str], str]] = {"target": (endpoint, model, api_key_env)}
    for role, ep, m, key in (("user", user_endpoint, user_model, user_api_key_env),
                             ("judge", judge_endpoint, judge_model, judge_api_key_env)):
        specs[role] = (ep if ep is not None else endpoint, m or model, key or api_key_env)
    local = {role for role, (ep, _, _) in specs.items() if is_local(ep)}
    for role, (ep, m, _) in specs.items():
        if role not in local and not m:
            if role == "target":
                raise CliError(f"--model is required with --endpoint {ep}")
            raise CliError(f"--{role}-model (or --model) is required with --{role}-endpoint {ep}")
    notice = LOCAL_MODEL_NOTICE if local else None
    if notice:
        click.echo(notice)
    target_max = max_tokens or (LOCAL_MAX_TOKENS["target"] if "target" in local else 1024)
    user_max = LOCAL_MAX_TOKENS["user"] if "user" in local else USER_MAX_TOKENS
    judge_max = judge_max_tokens or (LOCAL_MAX_TOKENS["judge"] if "judge" in local else JUDGE_MAX_TOKENS)

    with contextlib.ExitStack() as stack, errors_as_cli(resume_hint=True):
        bench = load_bench(dataset, revision, limit)
        jobs, skipped = plan(bench, conditions)
        target_name = LOCAL_MODEL_ALIAS if "target" in local else specs["target"][1]
        run = RunFolder(out or default_out(str(target_name), dataset, limit))
        click.echo(f"run folder: {run.path}")
        click.echo(f"dataset: {bench.source} ({len(bench.queries)} queries, {len(jobs)} conversations to run)")
        for note in bench.notes:
            click.echo(f"dataset note: {note}")

        # Local roles get the embedded model's address once it runs; run.json records them as "local".
        configs = {role: EndpointConfig(base_url=LOCAL if role in local else str(ep),
                                        model=LOCAL_MODEL_ALIAS if role in local else str(m),
                                        api_key_env=key, concurrency=concurrency)
                   for role, (ep, m, key) in specs.items()}
        meta = {
            "carryonbench_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "dataset": {"source": SAMPLE if dataset is None else bench.source, "revision": revision,
                        "manifest_sha256": _manifest_sha(bench)},
            "roles": public_roles(configs, local),
            "generation": {
                "target": Generation(temperature=temperature, max_tokens=target_max, seed=seed).public(),
                "user": {"temperature": USER_TEMPERATURE, "max_tokens": user_max, "seed": seed},
            },
            "judge": {"utility_mode": utility_mode, "max_tokens": judge_max},
            "conditions": list(conditions),
            "limit": limit,
            "shared_turn1": not no_shared_turn1,
            "prompts": {**prompt_hashes("user_simulator"), ORACLE_PROMPT: load_prompt(ORACLE_PROMPT).ref},
            "notice": notice,
            "skipped": skipped,
        }
        run.check(meta)                      # an unusable folder fails before anything starts
        if local:
            srv = LocalServer(stack, logprobs=utility_mode == "logprobs" and "judge" in local).get()
            configs = {role: dataclasses.replace(cfg, base_url=srv.base_url, model=srv.model) if role in local
                       else cfg for role, cfg in configs.items()}
        # Every role, before anything is generated or written (no cache yet: nothing lands in RUNDIR).
        asyncio.run(_check_then_close({role: Endpoint(cfg) for role, cfg in configs.items()}))
        meta = run.start(meta)
        usage = UsageLedger()
        eps = endpoints(configs, run, usage)
        asyncio.run(rollout_phase(bench, run, meta, eps, concurrency, checked=True))
        if fidelity:
            asyncio.run(fidelity_phase(bench, run, eps["judge"], concurrency))
        judge_phase(bench, run, eps["judge"], utility_mode, concurrency, judge_max)
        judged_by = eps["judge"].config.model      # the report shows the judge this command ran
        report_phase(bench, run, judged_by if judged_by in judges_present(run.path) else None)
        print_usage(usage)


async def _check_then_close(eps: dict[str, Endpoint]) -> None:
    try:
        await check_all(eps)
    finally:
        await close_all(eps)


def _manifest_sha(bench: Benchmark) -> Optional[str]:
    if bench.manifest is None:
        return None
    import hashlib
    import json

    return hashlib.sha256(json.dumps(bench.manifest, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------- subcommands on a run folder
RUNDIR = click.argument("rundir", type=click.Path(path_type=Path))


def open_run(rundir: Path) -> tuple[RunFolder, dict[str, Any], Benchmark]:
    run = RunFolder(rundir)
    meta = run.read_meta()
    if meta.get("notice"):
        click.echo(meta["notice"])
    bench = load_bench(meta["dataset"]["source"], meta["dataset"].get("revision"), meta.get("limit"))
    return run, meta, bench


def run_role(meta: dict[str, Any], role: str, server: LocalServer, *, endpoint: Optional[str] = None,
             model: Optional[str] = None, api_key_env: Optional[str] = None,
             concurrency: Optional[int] = None) -> EndpointConfig:
    """A role's config from run.json; the embedded model again if it ran there, unless overridden."""
    public = dict(meta["roles"][role])
    if model:
        public["model"] = model
    if is_local(endpoint) if endpoint is not None else public.get("local"):
        srv = server.get()
        return role_config({**public, "model": srv.model}, base_url=srv.base_url, concurrency=concurrency,
                           api_key_env=api_key_env)
    return role_config(public, base_url=endpoint, concurrency=concurrency, api_key_env=api_key_env)


@cli.command("rollout")
@RUNDIR
@click.option("--endpoint", help="Target base URL, if it moved since the run started (same model).")
@click.option("--user-endpoint", help="User simulator base URL, if it moved (same model).")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
def rollout_command(rundir: Path, endpoint: Optional[str], user_endpoint: Optional[str], concurrency: int) -> None:
    """Continue (or finish) the rollout of an existing run folder, with the settings in its run.json."""
    with contextlib.ExitStack() as stack, errors_as_cli(resume_hint=True):
        run, meta, bench = open_run(rundir)
        server = LocalServer(stack)
        configs = {"target": run_role(meta, "target", server, endpoint=endpoint, concurrency=concurrency),
                   "user": run_role(meta, "user", server, endpoint=user_endpoint, concurrency=concurrency)}
        usage = UsageLedger()
        run.prepare()
        asyncio.run(rollout_phase(bench, run, meta, endpoints(configs, run, usage), concurrency))
        print_usage(usage)


def judge_options(fn: Any) -> Any:
    fn = click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True)(fn)
    fn = click.option("--judge-api-key-env", help="API key variable [default: the run's].")(fn)
    fn = click.option("--judge-model", help="Judge model [default: the run's judge].")(fn)
    fn = click.option("--judge-endpoint", help="Judge base URL or 'local' [default: the run's judge].")(fn)
    return fn


def _judge_endpoint(meta: dict[str, Any], run: RunFolder, server: LocalServer, usage: UsageLedger,
                    judge_endpoint: Optional[str], judge_model: Optional[str], judge_api_key_env: Optional[str],
                    concurrency: int) -> Endpoint:
    cfg = run_role(meta, "judge", server, endpoint=judge_endpoint, model=judge_model,
                   api_key_env=judge_api_key_env, concurrency=concurrency)
    ep = Endpoint(cfg, cache=ResponseCache(run.cache_dir), usage=usage)
    asyncio.run(_check_then_close({"judge": ep}))
    return ep


@cli.command("judge")
@RUNDIR
@judge_options
@click.option("--utility-mode", type=click.Choice(UTILITY_MODE_CHOICES), callback=_utility_mode,
              help="[default: the run's]")
@click.option("--judge-max-tokens", type=click.IntRange(min=1), help="[default: the run's]")
def judge_command(rundir: Path, judge_endpoint: Optional[str], judge_model: Optional[str],
                  judge_api_key_env: Optional[str], concurrency: int, utility_mode: Optional[str],
                  judge_max_tokens: Optional[int]) -> None:
    """Judge the transcripts of a run folder (safety and utility); cached verdicts are not asked again."""
    with contextlib.ExitStack() as stack, errors_as_cli(resume_hint=True):
        run, meta, bench = open_run(rundir)
        usage = UsageLedger()
        mode = utility_mode or meta.get("judge", {}).get("utility_mode", "text")
        judge = _judge_endpoint(meta, run, LocalServer(stack, logprobs=mode == "logprobs"), usage, judge_endpoint,
                                judge_model, judge_api_key_env, concurrency)
        judge_phase(bench, run, judge, mode, concurrency,
                    judge_max_tokens or meta.get("judge", {}).get("max_tokens", JUDGE_MAX_TOKENS))
        print_usage(usage)


@cli.command("fidelity")
@RUNDIR
@judge_options
def fidelity_command(rundir: Path, judge_endpoint: Optional[str], judge_model: Optional[str],
                     judge_api_key_env: Optional[str], concurrency: int) -> None:
    """Check that every simulated user turn realises its move, and that NC turns do not leak the intent."""
    with contextlib.ExitStack() as stack, errors_as_cli(resume_hint=True):
        run, meta, bench = open_run(rundir)
        usage = UsageLedger()
        judge = _judge_endpoint(meta, run, LocalServer(stack), usage, judge_endpoint, judge_model,
                                judge_api_key_env, concurrency)
        asyncio.run(fidelity_phase(bench, run, judge, concurrency))
        print_usage(usage)


@cli.command("report")
@RUNDIR
@click.option("--judge", "judge_name", metavar="NAME",
              help="Judge model whose judgments to report, when several judged the run [default: the run's judge].")
def report_command(rundir: Path, judge_name: Optional[str]) -> None:
    """Write results.json, table.md, plots and report.html from the judgments of a run folder."""
    with errors_as_cli():
        run, _, bench = open_run(rundir)
        report_phase(bench, run, judge_name)


cli.add_command(compare_command, "compare")
cli.add_command(agreement_command, "agreement")


def main(argv: Optional[Sequence[str]] = None) -> None:
    cli.main(args=list(argv) if argv is not None else None, prog_name="carryon-eval")


if __name__ == "__main__":
    main()
