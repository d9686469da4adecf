"""`carryon-eval`: rollout -> judge -> report against any OpenAI-compatible endpoint.

    carryon-eval --endpoint URL --model NAME [--dataset DIR_OR_HUB_ID] [--out RUNDIR] ...
    carryon-eval rollout RUNDIR        continue the rollout of a run folder (settings from its run.json)
    carryon-eval fidelity RUNDIR       a suite's check on a run folder (CarryOnBench's move-fidelity check)
    carryon-eval judge RUNDIR          (re-)judge; only what is not cached is asked
    carryon-eval report RUNDIR         results.json, table.md, plots, report.html
    carryon-eval annotate RUNDIR       a sample of the run's judgments for people to label (HTML page)
    carryon-eval compare / agreement
    carryon-eval sweep PLAN.toml       many targets under one simulator and judge, then one leaderboard
    carryon-eval export RUNDIR --format inspect --out RUN.eval   another tool's format (carryon_eval.app.exporters)
    carryon-eval import RUN.eval --out RUNDIR   an inspect-ai log of the carryonbench task as a run folder

Without --endpoint (or with `--endpoint local`) every role whose endpoint is not given runs on the
embedded Gemma 3 270M (a smoke test, not a measurement). Bad input (dataset, endpoint, run folder)
ends with one line `carryon-eval: error: ...` on stderr and exit code 2, before any generation. A run
whose judge answered nothing usable for some condition writes everything, then exits 3 with one line; a run
that stopped with judgments missing (a judge call failed, --max-calls was spent, or a role's endpoints stopped
answering for --give-up-after seconds) writes what it has, marked incomplete, and exits 4 with one line.

This module only parses options into the config records of carryon_eval.app.config, runs the command's one
async function in one event loop, and prints.
"""
from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Coroutine, Optional, Sequence

import click

from carryon_eval import __version__

from carryon_eval.app import commands as app
from carryon_eval.app import options
from carryon_eval.app.config import (BootstrapChoice, ConfigError, EvaluateConfig, RoleChoice,
                                     RunOptions, config_of, judge_choices)
from carryon_eval.app.phases import NothingScored, RunIncomplete

from carryon_eval import defaults
from carryon_eval.cli_analysis import agreement_command, compare_command
from carryon_eval.cli_sweep import sweep_command
from carryon_eval.cli_common import (LateCommand, LateParams, OneLineGroup, UsageError, click_option, click_params,
                                     place_params,
                                     concurrency_option, endpoint_options, merge_aliases, os_error_line, request_options,
                                     verbose_option)
from carryon_eval.judge.batch import BatchError
from carryon_eval.dataset.load import DatasetError
from carryon_eval.model.budget import CallBudgetSpent
from carryon_eval.model.cache import CacheError
from carryon_eval.model.endpoint import EndpointError, EndpointRejected
from carryon_eval.app.exporters import ExportError, export_run, formats as export_formats
from carryon_eval.judge.phase import JudgeError
from carryon_eval.model.local import LocalModelError, LocalServerCrashed
from carryon_eval.progress import progress_interval_option
from carryon_eval.prompts import PromptError
from carryon_eval.run.folder import RunError, RunFolder
from carryon_eval.run.records import SettingsError
from carryon_eval.model.pool import EndpointGone, RoleFailed

class CliError(UsageError):
    """One line on stderr, `carryon-eval: error: ...`, then exit 2."""
    prog = "carryon-eval"


class CliGroup(LateParams, OneLineGroup):
    """`carryon-eval`: its own commands, and one command per registered suite's check (``carryon-eval NAME
    RUNDIR``: carryon_eval.suite.Suite.checks), made when the command line is first read."""
    error = CliError

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *(c.name for c in _checks())})

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        own = super().get_command(ctx, cmd_name)
        if own is not None:
            return own
        check = next((c for c in _checks() if c.name == cmd_name), None)
        return check_command(check.name, f"Run {check.help}") if check is not None else None


def _checks() -> list[Any]:
    from carryon_eval.suite import checks     # the wings are found when the command line is read

    return checks()


EXIT_CODES = """\b
Exit codes:
  0  done: every planned conversation and judgment is there
  2  bad input (dataset, option, endpoint, run folder): one line on stderr, nothing half-written
  3  written, but the judge answered nothing usable for some condition
  4  incomplete: stopped before the end (--max-calls spent, an endpoint gone or silent for --give-up-after,
     judgments missing); what was done is written, marked incomplete; rerun the same command to resume"""


class ClickOutput:
    """app.Output on the terminal: info to stdout, notes to stderr."""

    def info(self, text: str) -> None:
        click.echo(text)

    def note(self, text: str) -> None:
        click.echo(text, err=True)


INTERRUPTED = "carryon-eval: interrupted; rerun the same command to resume"
RESUME = "; rerun the same command to resume"
INCOMPLETE = 4          # exit code: stopped before the end (budget spent, an endpoint gone, judgments missing); everything written


def run_command(command: Coroutine[Any, Any, Any], *, resume_hint: bool = True,
                errors: tuple[type[Exception], ...] = ()) -> None:
    """Run one application command in one event loop; the package's errors (and the command's own ``errors``)
    become one line and exit 2, Ctrl-C (and SIGTERM, alike) a short note and exit 130 (143)."""
    try:
        asyncio.run(_terminable(command))
    except (DatasetError, RunError, PromptError, LocalModelError, JudgeError, ConfigError, SettingsError,
            BatchError, ExportError, CacheError, *errors) as exc:
        raise CliError(str(exc)) from None
    except LocalServerCrashed as exc:           # the embedded server died: say so, and whether a rerun can help
        click.echo(f"carryon-eval: {exc}{exc.hint(RESUME)}", err=True)
        sys.exit(INCOMPLETE)
    except (EndpointGone, RoleFailed, CallBudgetSpent) as exc:  # a resumable stop: what was done is written
        click.echo(f"carryon-eval: {exc}{RESUME}", err=True)
        sys.exit(INCOMPLETE)
    except EndpointRejected as exc:        # a bad key, request or model: the options must change, not the luck
        raise CliError(str(exc)) from None
    except EndpointError as exc:
        raise CliError(f"{exc}{RESUME if resume_hint else ''}") from None
    except OSError as exc:                 # a full disk, a file-size limit ...: one line, whatever was writing
        raise CliError(os_error_line(exc)) from None
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
def suite_option_keys() -> tuple[str, ...]:
    """The options the suites' own inputs take (Suite.load reads them from EvaluateConfig.suite_options)."""
    from carryon_eval.suite import suite_options     # the wings are found when the command line is read

    return tuple(o.key for o in suite_options())


def with_suite_options(params: list[click.Parameter]) -> list[click.Parameter]:
    """`carryon-eval`'s parameters with the registered suites' own options (carryon_eval.suite.SuiteOption), checks
    and judge settings in their places of the option table (before the option that follows each), made when the command
    line is first read (CliGroup's late parameters), so that importing the CLI imports no wing."""
    from carryon_eval.suite import check_options, judge_options, suite_options

    made = []
    for o in suite_options():
        kind: Any = click.Choice(o.choices) if o.choices else click.Path(path_type=Path) if o.path else str
        made.append(click.Option([o.flag, o.key], type=kind, metavar=o.metavar, default=o.default,
                                 show_default=o.default is not None, help=o.help))
    table = options.OWN
    params = place_params(params, made, before=table[table.index(options.SUITE_OPTIONS) + 1].name)
    params = place_params(params, click_params(options.judge_role_options()),
                          before=table[table.index(options.JUDGE_ROLE_OPTIONS) + 1].name)
    after_checks = table[table.index(options.JUDGE_OPTIONS) + 1].name      # the checks, then the judge settings
    params = place_params(params, click_params(check_options()), before=after_checks)
    return place_params(params, click_params(judge_options()), before=after_checks)


def _conditions(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> list[str]:
    """The registered suites' conditions (carryon_eval.suite): the default ones, ``all``, or a list."""
    try:
        resolved, every = options.read_conditions(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if every and ctx is not None:        # a suite with inputs of its own joins when they are given (the app)
        ctx.meta["conditions_all"] = True
    return list(resolved)


def evaluate_options(fn: Any) -> Any:
    """`carryon-eval`'s options, from the one table (carryon_eval.app.options.EVALUATE), the suites' own in their place."""
    for o in reversed(options.OWN):
        if o not in options.PLACES:      # the suites' own: CliGroup's late parameters (with_suite_options)
            fn = click_option(o, callback=_conditions if o.kind == "conditions" else None)(fn)
    return fn


@click.group(cls=CliGroup, late=with_suite_options, invoke_without_command=True, epilog=EXIT_CODES,
             context_settings={"help_option_names": ["-h", "--help"]})
@evaluate_options
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


def refuse_global_options(ctx: click.Context, opts: dict[str, Any]) -> None:
    """Options given before a subcommand are not silently dropped: the subcommand takes them (when it has an
    option of that name, ``carryon-eval --judge-model X judge RUNDIR`` judges with X), or they are refused with
    one line. ``--verbose`` applies to every command."""
    sub = cli.get_command(ctx, str(ctx.invoked_subcommand))
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


def evaluate_config(*, conditions_all: bool = False, **opts: Any) -> EvaluateConfig:
    """The config record of `carryon-eval`'s parsed options (click's names; the suites' own options by their keys)."""
    opts = merge_aliases(opts, CliError)
    for name in suite_option_keys():             # the suites' own options go together
        value = opts.pop(name, None)
        if value is not None:
            opts["suite_options"] = {**opts.get("suite_options", {}), name: value}
    try:
        return config_of(opts, conditions_all=conditions_all)
    except ConfigError as exc:
        raise CliError(str(exc)) from None


# ---------------------------------------------------------------- subcommands on a run folder
RUNDIR = click.argument("rundir", type=click.Path(path_type=Path))


@cli.command("rollout")
@RUNDIR
@click.option("--endpoint", help="Target base URL, if it moved since the run started (same model).")
@click.option("--user-endpoint", help="User simulator base URL, if it moved (same model).")
@click.option("--api-key-env", metavar="NAME", help="Environment variable of the target's key [default: the run's, "
                                                    "where the target's URL is the run's].")
@click.option("--user-api-key-env", metavar="NAME",
              help="Environment variable of the user simulator's key [default: the one given for its URL].")
@concurrency_option()
@click_option(options.NO_MODEL_CHECK)
@click_option(options.MAX_CALLS)
@click_option(options.GIVE_UP)
@click_option(options.HTTP_CLIENT.of_run())
@verbose_option
@progress_interval_option
def rollout_command(rundir: Path, endpoint: Optional[str], user_endpoint: Optional[str], api_key_env: Optional[str],
                    user_api_key_env: Optional[str], concurrency: int, model_check: bool, max_calls: Optional[int],
                    give_up_after: Optional[float], http_client: Optional[str]) -> None:
    """Continue (or finish) the rollout of an existing run folder, with the settings in its run.json."""
    run_command(app.continue_rollout(RunOptions(rundir, target_endpoint=endpoint, user_endpoint=user_endpoint,
                                                target_api_key_env=api_key_env, user_api_key_env=user_api_key_env,
                                                concurrency=concurrency, model_check=model_check,
                                                max_calls=max_calls, give_up_after=give_up_after,
                                                http_client=http_client),
                                     ClickOutput()))


def judge_options(fn: Any) -> Any:
    fn = progress_interval_option(fn)
    fn = request_options("judge", what="the judges", skip=("max_tokens",), temperature_help=" [default: the run's]",
                         max_tokens_help="")(fn)
    fn = verbose_option(fn)
    fn = click_option(options.GIVE_UP)(fn)
    fn = click_option(options.HTTP_CLIENT.of_run())(fn)
    fn = click_option(options.NO_MODEL_CHECK)(fn)
    fn = concurrency_option(defaults.JUDGE_CONCURRENCY)(fn)
    return endpoint_options("judge", endpoint_help="Judge base URL or 'local' [default: the run's judge].",
                            model_help="Judge model [default: the run's judge].",
                            key_help="API key variable [default: the one given for the judge's URL: the run's "
                                     "judge's; a judge on another URL names its own].")(fn)


def _request(opts: dict[str, Any], role: str) -> dict[str, Any]:
    return {name: opts.pop(f"{role}_{name}", None) for name in ("reasoning_effort", "system_prompt", "extra_body")}


def _judge_options(rundir: Path, judge_endpoint: Optional[str], judge_model: Optional[str],
                   judge_api_key_env: Optional[str], concurrency: int, **rest: Any) -> RunOptions:
    from carryon_eval.suite import run_judge_options

    request = _request(rest, "judge")
    scoring = {o.name: rest.pop(o.name) for o in run_judge_options() if o.name in rest}
    return RunOptions(rundir, judge=RoleChoice(judge_endpoint, judge_model, judge_api_key_env, **request),
                      concurrency=concurrency, judge_temperature=rest.pop("judge_temperature", None),
                      scoring=scoring, judges=judge_choices(rest), **rest)


def _with_run_judge_options(params: list[click.Parameter]) -> list[click.Parameter]:
    """`judge`'s parameters with the registered suites' judge settings ("the run's" as default) before
    --judge-max-tokens, made when the command line is first read (importing the CLI imports no wing)."""
    from carryon_eval.suite import run_judge_options

    params = place_params(params, click_params(options.judge_role_options(of_run=True)), before="judge_max_tokens")
    return place_params(params, click_params(run_judge_options()), before="judge_max_tokens")


@cli.command("judge", cls=LateCommand, late=_with_run_judge_options)
@RUNDIR
@judge_options
@click.option("--judge-max-tokens", type=click.IntRange(min=1), help="[default: the run's]")
@click_option(options.JUDGE_FORMAT.of_run())
@click.option("--batch-export", type=click.Path(path_type=Path), metavar="DIR",
              help="Write every judge request not in the cache as OpenAI Batch API JSONL into DIR (plus "
                   "manifest.json), and stop.")
@click_option(options.MAX_CALLS)
@click.option("--batch-import", type=click.Path(path_type=Path), multiple=True, metavar="FILE",
              help="OpenAI Batch API result file(s) to store in the cache before judging; repeatable. What they "
                   "lack is not asked live unless --live-rest is given.")
@click.option("--live-rest", is_flag=True,
              help="With --batch-import: ask the judge endpoint live for what the result files do not answer.")
def judge_command(**opts: Any) -> None:
    """Judge the transcripts of a run folder (safety and utility); cached verdicts are not asked again."""
    run_command(app.judge_folder(_judge_options(**opts), ClickOutput()))


def check_command(name: str, help: str) -> click.Command:
    """`carryon-eval NAME RUNDIR`: a suite's check (Suite.checks) on a run folder, with the run's judge."""
    def command(**opts: Any) -> None:
        run_command(app.check_folder(name, _judge_options(**opts), ClickOutput()))

    return click.command(name, help=help)(RUNDIR(judge_options(command)))


@cli.command("report")
@RUNDIR
@verbose_option
@click.option("--judge", "judge_name", metavar="NAME",
              help="Judge model whose judgments to report, when several judged the run [default: the run's judge].")
@click_option(options.BOOTSTRAP_RESAMPLES.of_run(help="Resamples of the query-cluster bootstrap [default: as run.json "
                                                        f"says, else {defaults.BOOTSTRAP_RESAMPLES}]."))
@click_option(options.BOOTSTRAP_SEED.of_run(help="Seed of the bootstrap resamples [default: as run.json says, else "
                                                 f"{defaults.BOOTSTRAP_SEED}]."))
@click.option("--dataset", metavar="DIR",
              help="The run's dataset folder, where it is now (a run folder moved or copied away from it); its rows "
                   "must be the ones run.json's content hashes pin [default: run.json's, else a folder of its name "
                   "above the run folder].")
def report_command(rundir: Path, judge_name: Optional[str], bootstrap_resamples: Optional[int],
                   bootstrap_seed: Optional[int], dataset: Optional[str]) -> None:
    """Write results.json, table.md, plots and report.html from the judgments of a run folder."""
    run_command(app.report_folder(RunFolder(rundir), ClickOutput(), judge_name,
                                  bootstrap=BootstrapChoice(bootstrap_resamples, bootstrap_seed), dataset=dataset),
                resume_hint=False)


def after_rundir(make: Callable[[], click.Parameter]) -> Callable[[list[click.Parameter]], list[click.Parameter]]:
    """A command's late parameters (LateCommand): the one ``make`` makes, right after RUNDIR."""
    return lambda params: [params[0], make(), *params[1:]]


def annotation_task_option() -> click.Option:
    """`annotate --task`: CarryOnBench's human-validation tasks (its wing's, read when the command line is)."""
    from carryon_eval.suites.carryonbench.human.labels import TASKS

    return click.Option(["--task"], type=click.Choice(TASKS), required=True,
                        help="utility: Ben-Util verdicts (y/n); safety: harm scores (1-5); fidelity: user moves (1-7).")


def export_format_option() -> click.Option:
    """`export --format`: the registered formats and the suites' reference layouts (read when the command line
    is, so that importing the CLI finds no suite)."""
    known = export_formats()
    return click.Option(["--format", "fmt"], type=click.Choice(list(known)), required=True,
                        help=" ".join(f"{e.name}: {e.description}." for e in known.values()))


@cli.command("annotate", cls=LateCommand, late=after_rundir(annotation_task_option))
@RUNDIR
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
    from carryon_eval.dataset.subset import SubsetError
    from carryon_eval.suites.carryonbench.human.annotate import AnnotateError      # the wing, when it runs
    from carryon_eval.suites.carryonbench.human.command import AnnotateConfig, annotate_folder

    run_command(annotate_folder(AnnotateConfig(rundir, task, sample, seed, out, fmt, judge_name), ClickOutput()),
                resume_hint=False, errors=(AnnotateError, SubsetError))


@cli.command("export", cls=LateCommand, late=after_rundir(export_format_option))
@RUNDIR
@click.option("--out", type=click.Path(), required=True,
              help="File or folder to write (see --format); a file format given a folder writes RUNDIR's name inside.")
@click.option("--judge", "judge_name", metavar="NAME", help="Judge model whose answers to export [default: the run's].")
@verbose_option
def export_command(rundir: Path, fmt: str, out: str, judge_name: Optional[str]) -> None:
    """Write a run folder in another tool's format: OpenSafeIntent's reference files, an inspect-ai eval log."""
    run_command(export_run(fmt, RunFolder(rundir), out, ClickOutput(), judge_name), resume_hint=False)


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
cli.add_command(sweep_command, "sweep")


def main(argv: Optional[Sequence[str]] = None) -> None:
    cli.main(args=list(argv) if argv is not None else None, prog_name="carryon-eval")


if __name__ == "__main__":
    main()
