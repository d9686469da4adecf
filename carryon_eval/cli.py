"""`carryon-eval`: rollout -> judge -> report against any OpenAI-compatible endpoint.

    carryon-eval --endpoint URL --model NAME [--dataset DIR_OR_HUB_ID] [--out RUNDIR] ...
    carryon-eval rollout RUNDIR        continue the rollout of a run folder (settings from its run.json)
    carryon-eval fidelity RUNDIR       move-fidelity check of the simulated user turns
    carryon-eval judge RUNDIR          (re-)judge; only what is not cached is asked
    carryon-eval report RUNDIR         results.json, table.md, plots, report.html
    carryon-eval annotate RUNDIR       a sample of the run's judgments for people to label (HTML page)
    carryon-eval compare / agreement
    carryon-eval export RUNDIR --format inspect --out RUN.eval   another tool's format (carryon_eval.app.exporters)
    carryon-eval import RUN.eval --out RUNDIR   an inspect-ai log of the carryonbench task as a run folder

Without --endpoint (or with `--endpoint local`) every role whose endpoint is not given runs on the
embedded Gemma 3 270M (a smoke test, not a measurement). Bad input (dataset, endpoint, run folder)
ends with one line `carryon-eval: error: ...` on stderr and exit code 2, before any generation. A run
whose judge answered nothing usable for some condition writes everything, then exits 3 with one line; a run
that stopped with judgments missing (a judge call failed, or a role's endpoints stopped answering for
--give-up-after seconds) writes what it has, marked incomplete, and exits 4 with one line.

This module only parses options into the config records of carryon_eval.app.config, runs the command's one
async function in one event loop, and prints.
"""
from __future__ import annotations

import asyncio
import errno
import signal
import sys
from pathlib import Path
from typing import Any, Coroutine, Optional, Sequence

import click

from carryon_eval import __version__

from carryon_eval.app import commands as app
from carryon_eval.app.config import (ROLES, AnnotateConfig, BootstrapChoice, ConfigError, EvaluateConfig, RoleChoice,
                                     RunOptions)
from carryon_eval.app.phases import NothingScored, RunIncomplete

from carryon_eval import defaults
from carryon_eval.cli_analysis import agreement_command, compare_command
from carryon_eval.human.annotate import TASKS as ANNOTATION_TASKS
from carryon_eval.human.annotate import AnnotateError
from carryon_eval.cli_common import (UsageError, alias_option, concurrency_option, endpoint_options, merge_aliases,
                                     request_options, temperature_option_value, verbose_option)
from carryon_eval.judge.batch import BatchError
from carryon_eval.dataset.load import DatasetError
from carryon_eval.model.endpoint import EndpointError, EndpointRejected
from carryon_eval.app.exporters import ExportError, export_run, formats as export_formats
from carryon_eval.judge.phase import JUDGE_FORMATS, JudgeError
from carryon_eval.model.local import LocalModelError
from carryon_eval.progress import progress_interval_option
from carryon_eval.prompts import PromptError
from carryon_eval.run.folder import RunError
from carryon_eval.model.pool import EndpointGone
from carryon_eval.suite import suite_options

LOCAL_MAX_TOKENS = defaults.LOCAL_MAX_TOKENS      # token caps of roles on the embedded model (help texts)


class CliError(UsageError):
    """One line on stderr, `carryon-eval: error: ...`, then exit 2."""
    prog = "carryon-eval"


class ClickOutput:
    """app.Output on the terminal: info to stdout, notes to stderr."""

    def info(self, text: str) -> None:
        click.echo(text)

    def note(self, text: str) -> None:
        click.echo(text, err=True)


INTERRUPTED = "carryon-eval: interrupted; rerun the same command to resume"
RESUME = "; rerun the same command to resume"
INCOMPLETE = 4          # exit code: stopped before the end (an endpoint gone, judgments missing); everything written


def run_command(command: Coroutine[Any, Any, Any], *, resume_hint: bool = True) -> None:
    """Run one application command in one event loop; the package's errors become one line and exit 2,
    Ctrl-C (and SIGTERM, alike) a short note and exit 130 (143)."""
    try:
        asyncio.run(_terminable(command))
    except (DatasetError, RunError, PromptError, LocalModelError, JudgeError, AnnotateError,
            ConfigError, BatchError, ExportError) as exc:
        raise CliError(str(exc)) from None
    except EndpointGone as exc:            # a role stopped answering: what was done is written
        click.echo(f"carryon-eval: {exc}{RESUME}", err=True)
        sys.exit(INCOMPLETE)
    except EndpointRejected as exc:        # a bad key, request or model: the options must change, not the luck
        raise CliError(str(exc)) from None
    except EndpointError as exc:
        raise CliError(f"{exc}{RESUME if resume_hint else ''}") from None
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        where = f" writing {exc.filename}" if exc.filename else ""
        raise CliError(f"the disk is full{where}; free some space, then rerun the same command to resume") from None
    except _Terminated:
        click.echo(INTERRUPTED, err=True)
        sys.exit(128 + signal.SIGTERM)
    except NothingScored as exc:
        click.echo(f"carryon-eval: {exc}", err=True)
        sys.exit(3)
    except RunIncomplete as exc:
        click.echo(f"carryon-eval: {exc}", err=True)
        sys.exit(INCOMPLETE)
    except KeyboardInterrupt:
        click.echo(INTERRUPTED, err=True)
        sys.exit(130)


class _Terminated(Exception):
    """SIGTERM arrived: the command was cancelled like Ctrl-C cancels it (its endpoints and the embedded
    model closed on the way out)."""


async def _terminable(command: Coroutine[Any, Any, Any]) -> None:
    """Await `command`; SIGTERM cancels it as Ctrl-C does and ends in `_Terminated`."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    terminated = False

    def on_sigterm() -> None:
        nonlocal terminated
        terminated = True
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except (NotImplementedError, RuntimeError, ValueError):   # not the main thread, or no signals here
        await command
        return
    try:
        await command
    except asyncio.CancelledError:
        if terminated:
            raise _Terminated() from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


# ---------------------------------------------------------------- option parsing
def suite_options_of_suites(fn: Any) -> Any:
    """The registered suites' own options (carryon_eval.suite.SuiteOption), as click options."""
    for o in reversed(suite_options()):
        kind: Any = click.Choice(o.choices) if o.choices else click.Path(path_type=Path) if o.path else str
        fn = click.option(o.flag, o.key, type=kind, metavar=o.metavar, default=o.default,
                          show_default=o.default is not None, help=o.help)(fn)
    return fn


def _conditions(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> list[str]:
    """The registered suites' conditions (carryon_eval.suite): the default ones, ``all``, or a list."""
    from carryon_eval.suite import SuiteError, all_conditions, default_conditions, resolve_conditions, without_inputs

    if value is None:
        return list(default_conditions())
    items = [c.strip().lower() for c in value.split(",") if c.strip()]
    try:
        if not items:
            raise SuiteError("no condition given")
        resolved = resolve_conditions(items)
    except SuiteError:
        raise click.BadParameter(f"expected all or a comma-separated subset of {','.join(all_conditions())}, "
                                 f"got {value!r}") from None
    if "all" in items:                   # a suite with inputs of its own joins when they are given (the app)
        if ctx is not None:
            ctx.meta["conditions_all"] = True
        resolved = without_inputs(resolved)
    return resolved


UTILITY_MODE_CHOICES = ("text", "logprob", "logprobs")
MAX_CALLS = click.option("--max-calls", type=click.IntRange(min=1),
                         help="Stop cleanly after N model calls that reach a server (all roles); rerun to resume.")

GIVE_UP = click.option("--give-up-after", type=click.FloatRange(min=1), metavar="SECONDS",
                       help=f"End the phase when a role's endpoint(s) have not answered for this long "
                            f"[default: {defaults.GIVE_UP_AFTER:g}s, or 1.5 request timeouts if longer]; rerun "
                            "to resume.")

HTTP_CLIENT_HELP = ("HTTP transport of the endpoint client: aiohttp's (openai[aiohttp], the lighter one) or httpx's "
                    "(the openai library's own default); recorded per role in run.json.")


def http_client_option(default: Optional[str]) -> Any:
    return click.option("--http-client", type=click.Choice(defaults.HTTP_CLIENTS), default=default,
                        show_default=default is not None,
                        help=HTTP_CLIENT_HELP if default is not None else HTTP_CLIENT_HELP + " [default: the run's]")


no_model_check_option = click.option(
    "--no-model-check", "model_check", flag_value=False, default=True,
    help="Do not ask the endpoints' /models whether they serve the model (for servers whose list is incomplete).")


def _utility_mode(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    return "logprobs" if value == "logprob" else value


JUDGE_FORMAT_HELP = ("How judges are asked to answer: a JSON schema with an enum answer (where the endpoint "
                     "rejects it, text), or text only.")


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@endpoint_options(api_key_default=defaults.API_KEY_ENV, repeatable=True,
                  endpoint_help="Target model's OpenAI-compatible base URL (…/v1); 'local' or none: embedded model. "
                                "Repeat it for a pool of servers of the same model (fewest in flight first; a "
                                "dead one is taken out and tried again later).",
                  model_help="Target model name (required with an endpoint URL).",
                  key_help="Environment variable holding the target endpoint's API key (default for the other "
                           "roles too).")
@endpoint_options("user", repeatable=True, endpoint_help="User simulator endpoint [default: the target's]; repeatable.",
                  model_help="User simulator model [default: the target's].",
                  key_help="API key variable for the user simulator [default: --api-key-env].")
@endpoint_options("judge", repeatable=True, endpoint_help="Judge endpoint [default: the target's]; repeatable.",
                  model_help="Judge model [default: the target's].",
                  key_help="API key variable for the judge [default: --api-key-env].")
@click.option("--dataset", help="Dataset folder or Hub id [default: the built-in sample].")
@click.option("--revision", help="Dataset revision (Hub).")
@click.option("--out", type=click.Path(path_type=Path),
              help="Run folder [default: carryon-runs/<model>__<dataset>]; rerunning into it resumes.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries, with all their conversations.")
@click.option("--conditions", default=None, callback=_conditions,
              help="Comma-separated conditions to run [default: turn1,oracle,bc,nc]; 'triplet' is not in the "
                   "default set; 'all' runs every condition of every suite.")
@concurrency_option(help="Conversations (and requests per endpoint) in flight.")
@request_options("target", what="the target model",
                 max_tokens_help=f" [default: {defaults.TARGET_MAX_TOKENS}; {LOCAL_MAX_TOKENS['target']} on the "
                                 "embedded model]",
                 temperature_help=f" [default: {defaults.TARGET_TEMPERATURE:g}]")
@alias_option("--max-tokens", "target_max_tokens", type=click.IntRange(min=1))
@alias_option("--temperature", "target_temperature", callback=temperature_option_value)
@request_options("user", what="the user simulator",
                 max_tokens_help=f" [default: {defaults.USER_MAX_TOKENS}; {LOCAL_MAX_TOKENS['user']} on the "
                                 "embedded model]",
                 temperature_help=f" [default: {defaults.USER_TEMPERATURE:g}]")
@request_options("judge", what="the judges",
                 max_tokens_help=f", text mode [default: {defaults.JUDGE_MAX_TOKENS}; {LOCAL_MAX_TOKENS['judge']} on "
                                 "the embedded model]",
                 temperature_help=" [default: 0]")
@click.option("--seed", type=int, default=defaults.SEED, show_default=True,
              help="Base seed of target and user simulator calls.")
@click.option("--no-shared-turn1", is_flag=True,
              help="Generate the first reply of every bc/nc conversation separately (default: one turn-1 reply "
                   "per query, shared).")
@click.option("--fidelity", is_flag=True, help="Also run the move-fidelity check (fidelity.json).")
@click.option("--utility-mode", type=click.Choice(UTILITY_MODE_CHOICES), default="text", show_default=True,
              callback=_utility_mode, help="How the utility judge answers: yes/no text, or P(yes) from logprobs.")
@no_model_check_option
@click.option("--judge-format", type=click.Choice(JUDGE_FORMATS), default="json_schema", show_default=True,
              help=JUDGE_FORMAT_HELP)
@click.option("--subset", type=click.Choice(("full", "quick")), default="full", show_default=True,
              help="quick: every query for turn1/oracle and one BC + one NC conversation per query, stratified "
                   "over lengths (carryon_eval/subset.py says how); about 1/5 of the calls.")
@suite_options_of_suites
@click.option("--dry-run", is_flag=True,
              help="Print the calls and estimated tokens per role and condition (and the cost with --price), "
                   "then stop: nothing is called, nothing is written.")
@click.option("--json", "dry_run_json", is_flag=True,
              help="With --dry-run: print the table as one JSON object (per role and condition: calls, prompt and "
                   "completion tokens, cached; outcome-dependent calls under up_to).")
@click.option("--price", "prices", multiple=True, metavar="ROLE=IN/OUT",
              help="USD per 1M prompt/completion tokens of a role (target, user, judge), e.g. judge=0.15/0.60; "
                   "repeatable.")
@MAX_CALLS
@click.option("--bootstrap-resamples", type=click.IntRange(min=1), default=defaults.BOOTSTRAP_RESAMPLES,
              show_default=True, help="Resamples of the query-cluster bootstrap behind every 95% CI (run.json records it).")
@click.option("--bootstrap-seed", type=int, default=defaults.BOOTSTRAP_SEED, show_default=True,
              help="Seed of the bootstrap resamples (run.json records it).")
@GIVE_UP
@http_client_option(defaults.HTTP_CLIENT)
@verbose_option
@progress_interval_option
@click.version_option(__version__, prog_name="carryon-eval")
@click.pass_context
def cli(ctx: click.Context, **opts: Any) -> None:
    """CarryOnBench evaluator: rollout, judge and report in one go (or one phase at a time with the subcommands)."""
    opts = merge_aliases(opts, CliError)
    if ctx.invoked_subcommand is not None:
        refuse_global_options(ctx, opts)
        return
    run_command(app.evaluate(evaluate_config(**opts, conditions_all=bool(ctx.meta.get("conditions_all"))),
                             ClickOutput()))


#: The options the suites' own inputs take (Suite.load reads them from EvaluateConfig.suite_options).
SUITE_OPTIONS = tuple(o.key for o in suite_options())


def refuse_global_options(ctx: click.Context, opts: dict[str, Any]) -> None:
    """Options given before a subcommand are not silently dropped: the subcommand takes them (when it has an
    option of that name, ``carryon-eval --judge-model X judge RUNDIR`` judges with X), or they are refused with
    one line. ``--verbose`` applies to every command."""
    sub = cli.commands.get(str(ctx.invoked_subcommand))
    own = {p.name for p in sub.params} if sub is not None else set()
    given = [name for name in opts if ctx.get_parameter_source(_alias_source(ctx, name, opts)) ==
             click.core.ParameterSource.COMMANDLINE]
    refused = [name for name in given if name not in own]
    if refused:
        flags = ", ".join(_flag(ctx, name) for name in refused)
        raise CliError(f"{flags} given before the '{ctx.invoked_subcommand}' subcommand, which does not take it; "
                       f"see `carryon-eval {ctx.invoked_subcommand} --help`")
    passed: dict[str, Any] = {}
    for name in given:
        value, param = opts[name], next(p for p in sub.params if p.name == name)   # type: ignore[union-attr]
        if isinstance(value, tuple) and not getattr(param, "multiple", False):
            if len(value) != 1:
                raise CliError(f"{_flag(ctx, name)} given {len(value)} times before the "
                               f"'{ctx.invoked_subcommand}' subcommand, which takes one")
            value = value[0]
        passed[name] = value
    ctx.default_map = {**(ctx.default_map or {}), str(ctx.invoked_subcommand): passed}


def _alias_source(ctx: click.Context, name: str, opts: dict[str, Any]) -> str:
    """The parameter whose source tells whether ``name`` was given (its hidden alias, when that was)."""
    alias = f"{name}__alias"
    if ctx.get_parameter_source(alias) == click.core.ParameterSource.COMMANDLINE:
        return alias
    return name


def _flag(ctx: click.Context, name: str) -> str:
    param = next((p for p in ctx.command.params if p.name in (name, f"{name}__alias")
                  and ctx.get_parameter_source(p.name) == click.core.ParameterSource.COMMANDLINE), None)
    return param.opts[0] if param is not None and param.opts else f"--{name.replace('_', '-')}"


def _role(endpoints: Any, model: Optional[str], key: Optional[str], request: dict[str, Any]) -> RoleChoice:
    """A role from its (repeatable) endpoint option: the first URL, the others its pool."""
    urls = (endpoints,) if isinstance(endpoints, str) else tuple(endpoints or ())
    return RoleChoice(urls[0] if urls else None, model, key, pool=urls[1:], **request)


def _request(opts: dict[str, Any], role: str) -> dict[str, Any]:
    return {name: opts.pop(f"{role}_{name}", None) for name in ("reasoning_effort", "system_prompt", "extra_body")}


def evaluate_config(*, endpoint: Any, model: Optional[str], api_key_env: str,
                    user_endpoint: Any, user_model: Optional[str], user_api_key_env: Optional[str],
                    judge_endpoint: Any, judge_model: Optional[str], judge_api_key_env: Optional[str],
                    no_shared_turn1: bool, conditions: Sequence[str], prices: Sequence[str] = (),
                    **rest: Any) -> EvaluateConfig:
    rest = merge_aliases(rest, CliError)
    for name in SUITE_OPTIONS:                   # given directly (the Python API): into the suites' options
        value = rest.pop(name, None)
        if value is not None:
            rest["suite_options"] = {**rest.get("suite_options", {}), name: value}
    requests = {role: _request(rest, role) for role in ROLES}
    target_temperature = rest.pop("target_temperature", None)
    return EvaluateConfig(target=_role(endpoint, model, api_key_env, requests["target"]),
                          user=_role(user_endpoint, user_model, user_api_key_env, requests["user"]),
                          judge=_role(judge_endpoint, judge_model, judge_api_key_env, requests["judge"]),
                          conditions=tuple(conditions), shared_turn1=not no_shared_turn1,
                          prices=tuple(prices), max_tokens=rest.pop("target_max_tokens", None),
                          temperature=defaults.TARGET_TEMPERATURE if target_temperature is None
                          else target_temperature, **rest)


# ---------------------------------------------------------------- subcommands on a run folder
RUNDIR = click.argument("rundir", type=click.Path(path_type=Path))


@cli.command("rollout")
@RUNDIR
@click.option("--endpoint", help="Target base URL, if it moved since the run started (same model).")
@click.option("--user-endpoint", help="User simulator base URL, if it moved (same model).")
@concurrency_option()
@no_model_check_option
@MAX_CALLS
@GIVE_UP
@http_client_option(None)
@verbose_option
@progress_interval_option
def rollout_command(rundir: Path, endpoint: Optional[str], user_endpoint: Optional[str], concurrency: int,
                    model_check: bool, max_calls: Optional[int], give_up_after: Optional[float],
                    http_client: Optional[str]) -> None:
    """Continue (or finish) the rollout of an existing run folder, with the settings in its run.json."""
    run_command(app.continue_rollout(RunOptions(rundir, target_endpoint=endpoint, user_endpoint=user_endpoint,
                                                concurrency=concurrency, model_check=model_check,
                                                max_calls=max_calls, give_up_after=give_up_after,
                                                http_client=http_client),
                                     ClickOutput()))


def judge_options(fn: Any) -> Any:
    fn = progress_interval_option(fn)
    fn = request_options("judge", what="the judges", skip=("max_tokens",), temperature_help=" [default: the run's]",
                         max_tokens_help="")(fn)
    fn = verbose_option(fn)
    fn = GIVE_UP(fn)
    fn = http_client_option(None)(fn)
    fn = no_model_check_option(fn)
    fn = concurrency_option(defaults.JUDGE_CONCURRENCY)(fn)
    return endpoint_options("judge", endpoint_help="Judge base URL or 'local' [default: the run's judge].",
                            model_help="Judge model [default: the run's judge].",
                            key_help="API key variable [default: the run's].")(fn)


def _judge_options(rundir: Path, judge_endpoint: Optional[str], judge_model: Optional[str],
                   judge_api_key_env: Optional[str], concurrency: int, **rest: Any) -> RunOptions:
    request = _request(rest, "judge")
    return RunOptions(rundir, judge=RoleChoice(judge_endpoint, judge_model, judge_api_key_env, **request),
                      concurrency=concurrency, judge_temperature=rest.pop("judge_temperature", None), **rest)


@cli.command("judge")
@RUNDIR
@judge_options
@click.option("--utility-mode", type=click.Choice(UTILITY_MODE_CHOICES), callback=_utility_mode,
              help="[default: the run's]")
@click.option("--judge-max-tokens", type=click.IntRange(min=1), help="[default: the run's]")
@click.option("--judge-format", type=click.Choice(JUDGE_FORMATS), help=f"{JUDGE_FORMAT_HELP} [default: the run's]")
@click.option("--batch-export", type=click.Path(path_type=Path), metavar="DIR",
              help="Write every judge request not in the cache as OpenAI Batch API JSONL into DIR (plus "
                   "manifest.json), and stop.")
@MAX_CALLS
@click.option("--batch-import", type=click.Path(path_type=Path), multiple=True, metavar="FILE",
              help="OpenAI Batch API result file(s) to store in the cache before judging; repeatable. What they "
                   "lack is not asked live unless --live-rest is given.")
@click.option("--live-rest", is_flag=True,
              help="With --batch-import: ask the judge endpoint live for what the result files do not answer.")
def judge_command(**opts: Any) -> None:
    """Judge the transcripts of a run folder (safety and utility); cached verdicts are not asked again."""
    run_command(app.judge_folder(_judge_options(**opts), ClickOutput()))


@cli.command("fidelity")
@RUNDIR
@judge_options
def fidelity_command(**opts: Any) -> None:
    """Check that every simulated user turn realises its move, and that NC turns do not leak the intent."""
    run_command(app.fidelity_folder(_judge_options(**opts), ClickOutput()))


@cli.command("report")
@RUNDIR
@verbose_option
@click.option("--judge", "judge_name", metavar="NAME",
              help="Judge model whose judgments to report, when several judged the run [default: the run's judge].")
@click.option("--bootstrap-resamples", type=click.IntRange(min=1),
              help="Resamples of the query-cluster bootstrap [default: as run.json says, else "
                   f"{defaults.BOOTSTRAP_RESAMPLES}].")
@click.option("--bootstrap-seed", type=int,
              help=f"Seed of the bootstrap resamples [default: as run.json says, else {defaults.BOOTSTRAP_SEED}].")
def report_command(rundir: Path, judge_name: Optional[str], bootstrap_resamples: Optional[int],
                   bootstrap_seed: Optional[int]) -> None:
    """Write results.json, table.md, plots and report.html from the judgments of a run folder."""
    run_command(app.report_folder(rundir, ClickOutput(), judge_name,
                                  bootstrap=BootstrapChoice(bootstrap_resamples, bootstrap_seed)),
                resume_hint=False)


@cli.command("annotate")
@RUNDIR
@click.option("--task", type=click.Choice(ANNOTATION_TASKS), required=True,
              help="utility: Ben-Util verdicts (y/n); safety: harm scores (1-5); fidelity: user moves (1-7).")
@click.option("--sample", "sample", type=click.IntRange(min=1), default=100, show_default=True,
              help="Cases to sample, stratified by condition and by the judge's answer.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Page (or Label Studio tasks JSON) to write [default: RUNDIR/annotate-TASK-seedS.html].")
@click.option("--format", "fmt", type=click.Choice(("html", "label-studio")), default="html", show_default=True,
              help="One self-contained page, or Label Studio's tasks JSON with its labeling config beside it.")
@click.option("--judge", "judge_name", metavar="NAME",
              help="Judge model whose answers stratify the sample, when several judged the run.")
def annotate_command(rundir: Path, task: str, sample: int, seed: int, out: Optional[Path], fmt: str,
                     judge_name: Optional[str]) -> None:
    """Write a page for people to label a reproducible sample of the run's judgments (the judge's answers
    hidden); `carryon-eval agreement RUNDIR LABELS.jsonl` then measures the judges against them."""
    run_command(app.annotate_folder(AnnotateConfig(rundir, task, sample, seed, out, fmt, judge_name),
                                    ClickOutput()), resume_hint=False)


@cli.command("export")
@RUNDIR
@click.option("--format", "fmt", type=click.Choice(list(export_formats())), required=True,
              help=" ".join(f"{e.name}: {e.description}." for e in export_formats().values()))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="File or folder to write (see --format).")
@click.option("--judge", "judge_name", metavar="NAME", help="Judge model whose answers to export [default: the run's].")
@verbose_option
def export_command(rundir: Path, fmt: str, out: Path, judge_name: Optional[str]) -> None:
    """Write a run folder in another tool's format: OpenSafeIntent's reference files, an inspect-ai eval log."""
    run_command(export_run(fmt, rundir, out, ClickOutput(), judge_name), resume_hint=False)


@cli.command("import")
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="New run folder to write (then `carryon-eval report RUNDIR`).")
def import_command(log: Path, out: Path) -> None:
    """Turn an inspect-ai eval log of the carryonbench task into a run folder (extra [inspect])."""
    from .inspect_bridge import require_inspect

    try:
        require_inspect()
        from .inspect_bridge.importer import import_log
        click.echo(import_log(log, out))
    except ExportError as exc:
        raise CliError(str(exc)) from None


cli.add_command(compare_command, "compare")
cli.add_command(agreement_command, "agreement")


def main(argv: Optional[Sequence[str]] = None) -> None:
    cli.main(args=list(argv) if argv is not None else None, prog_name="carryon-eval")


if __name__ == "__main__":
    main()
