"""The application layer of `carryon-eval`: one async function per command, run in one event loop.

    asyncio.run(evaluate(EvaluateConfig(...), out))        # rollout -> judge -> [checks] -> report
    asyncio.run(continue_rollout(RunOptions(rundir), out))  # and judge_folder, check_folder, report_folder

The CLI (carryon_eval.cli) parses options into these config records, makes the one ``asyncio.run`` and
turns the package's errors into its one-line error. Everything else is the application layer's: which
roles run on the embedded model and its lifetime (started on first need, stopped on any exit), the endpoint
checks before anything is spent, the order of the phases, closing every endpoint, and the lines a user reads
(through ``Output``: ``info`` to stdout, ``note`` to stderr).

This module orders the phases of every command (and pipelines rollout into judging); the config records are in
app.config, the session's resources and checks in app.session, the phases in app.phases, and the logic of each
part in its own module (dry_run, subset, pipeline, pool, batch).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from carryon_eval.app import options
from carryon_eval.option import refused_alone
from carryon_eval.app.config import (BootstrapChoice, ConfigError, EvaluateConfig, Output,
                                     RoleChoice, RunOptions, configure, default_out, leave_out_empty, load_bench,
                                     new_run_meta, refuse_empty_conditions, resolve_judges, resolve_roles, self_notice,
                                     suite_options)
from carryon_eval.app.phases import (RunIncomplete, check_phase, judge_phase, report_phase,
                                     require_complete, require_scored, rollout_phase, run_jobs)
from carryon_eval.app.reports import InProcess, Reports
from carryon_eval.app.session import Session, check_configs, check_endpoints
from carryon_eval.cli_common import is_local
from carryon_eval.model.cache import ResponseCache
from carryon_eval.model.endpoint import EndpointConfig
from carryon_eval.dataset.load import Benchmark
from carryon_eval.app.pipeline import judge_while_rolling_out
from carryon_eval.model.pool import EndpointGone, RoleFailed
from carryon_eval.judge.batch import (MANIFEST, BatchError, ExportingEndpoint, export_requests, import_results,
                                      pending_requests)
from carryon_eval.app.cost import parse_prices, run_cost_table
from carryon_eval.model.budget import CallBudget, CallBudgetSpent
from carryon_eval.model.endpoint import ChatEndpoint
from carryon_eval.judge.store import has_judge_roles, judges_present
from carryon_eval.model.local import LOCAL_ENDPOINT, LOCAL_MODEL_ALIAS, LOCAL_MODEL_NOTICE, LocalServerCrashed
from carryon_eval.run.records import JudgeSettings, RunMeta
from carryon_eval.run.results import Results
from carryon_eval.report.phase import suite_inputs
from carryon_eval.run.folder import RunFolder
from carryon_eval.run.lock import hold
from carryon_eval.dataset.subset import SubsetError
from carryon_eval.suite.reopen import open_run as reopen_run
from carryon_eval.judge.scorers import make_scorer, planned_uses
from carryon_eval.suite import (Configured, DesignView, PlanSettings, ProbeContext, ScoringPlan, SuiteError, available,
                                default_conditions, exporters, judge_roles, load_inputs, plan_jobs, refuse_missing,
                                selected, suites)

# ---------------------------------------------------------------- commands
def scorer_inputs(conditions: Sequence[str], scoring: dict[str, Any], records: dict[str, Any]) -> set[str]:
    """The suites whose own inputs the run's scorers read (``reads_inputs``: suite -> why it is needed, e.g. a
    scorer that reads OpenSafeIntent's release); ConfigError (one line) when one was not given. ``scoring``: the
    suites' judge settings, which say which scorers stand where a suite names one (planned_uses)."""
    needed: dict[str, str] = {}
    for name in planned_uses(ScoringPlan.of(conditions), JudgeSettings.of(scoring)).scorers:
        needed.update(getattr(make_scorer(name), "reads_inputs", {}))
    for suite, why in needed.items():
        if suite not in records:
            raise ConfigError(why)
    return set(needed)


async def evaluate(cfg: EvaluateConfig, out: Output,
                   limits: Optional[dict[tuple[str, ...], Any]] = None,
                   reports: Optional[Reports] = None) -> Optional[Results]:
    """The whole pipeline on a new (or resumed) run folder: rollout -> judge -> [checks] -> report; returns
    the results (results.json's record), or None after a dry run and when no CarryOnBench condition ran (an
    OpenSafeIntent-only run writes its own files). ``limits``: the endpoint limiters shared with other runs in
    this event loop (a sweep's; app.session.Session), its requests waiting there by the run's place in the sweep;
    ``reports``: where the report is written (app.reports: a sweep's worker process; by default this process)."""
    roles, local = resolve_roles(cfg)
    judges, judges_local = resolve_judges(cfg.judges, roles, local, cfg.judge_temperature)
    if local:
        out.info(LOCAL_MODEL_NOTICE)
    try:
        parse_prices(cfg.prices)
    except ValueError as exc:                # a bad --price, before anything starts
        raise ConfigError(str(exc)) from None
    async with Session(out, model_check=cfg.model_check, give_up_after=cfg.give_up_after, prices=cfg.prices,
                       limits=limits, priority=int(cfg.sweep.index or 0) if cfg.sweep else 0) as session:
        bench = load_bench(cfg.dataset, cfg.revision, cfg.limit, cfg.subset)
        target_name = LOCAL_MODEL_ALIAS if "target" in local else str(roles["target"].model)
        given = [v for v in cfg.suite_options.values() if isinstance(v, Path)]     # the suites' input folders
        run = RunFolder(cfg.out or default_out(target_name, cfg.dataset, cfg.limit, cfg.subset, given))
        earlier = run.read_meta().suites if run.exists() else None
        records = load_inputs(bench, suite_options(cfg), earlier, base=run.path)      # the suites' own inputs, checked
        conditions = available(bench, cfg.conditions, records) if cfg.conditions_all else list(cfg.conditions)
        say = out.note if cfg.dry_run_json else out.info       # --json: the table is stdout's only line
        cfg, configured = configure(cfg, bench, conditions)
        for line in (line for c in configured for line in c.lines):
            say(line)
        records = _records_used(cfg, conditions, records, "".join(c.chosen_by for c in configured))
        cfg, jobs, skipped, left_out = _planned(cfg, bench, conditions)
        user_turns = any(j.moves for j in jobs)
        for line in self_notice(roles, local, user_turns):    # a role that fell back to the target model
            out.info(line)
        notes = [n for c in configured if c.notes is not None for n in c.notes] \
            if any(c.notes is not None for c in configured) else list(bench.notes)
        _say_plan(say, cfg, bench, run, jobs, records, left_out, notes)
        every, local = {**roles, **judges}, local | judges_local     # the judge roles' own judges beside the roles
        configs = _endpoint_configs(cfg, every, local)
        meta = _new_meta(cfg, bench, configs, every, local, skipped, configured, user_turns, records)
        _print_cost_table(out, cfg, bench, jobs, meta, run)
        if cfg.dry_run:
            return None
        session.hold(run, "carryon-eval")    # one writer at a time (run.lock)
        run.check(meta)                      # an unusable folder fails before anything starts
        eps, meta = await _started_endpoints(cfg, session, run, meta, configs, every, local)
        results = await _phases(cfg, bench, run, meta, eps, jobs, out, lambda: session.record_sent(run),
                                reports or InProcess())
        session.print_usage()
    require_scored(results, run)
    require_complete(results, run)
    return results


def _records_used(cfg: EvaluateConfig, conditions: Sequence[str], records: dict[str, Any],
                  chosen_by: str) -> dict[str, Any]:
    """The suites' input records this run uses: those of the suites its conditions ask for and those its scorers
    read; a suite's inputs given but used by none is refused (one line naming its flag). ``chosen_by``: the
    suites' word on who chose the settings whose scorers read inputs (Configured.chosen_by)."""
    try:
        read_by_scorers = scorer_inputs(conditions, cfg.scoring, records)
    except ConfigError as exc:
        if chosen_by:
            raise ConfigError(f"{exc}{chosen_by}") from None
        raise
    # a suite's inputs given, but none of the conditions of the suites that read them asked for (the
    # triplet and opensafeintent suites read the same release folder), nor read by the run's scorers; the
    # records of suites neither asked for nor read are dropped
    used = {s.name for s in suites() if set(s.conditions) & set(conditions)} | read_by_scorers
    unused = [s for s in suites() if s.name in records and s.name not in used]
    if unused and not set(records) & used:
        flag = next((o.flag for s in suites() if s.name in records for o in s.options if o.path), unused[0].name)
        wanted = [c for s in sorted(unused, key=lambda s: not s.options) for c in s.conditions]
        raise ConfigError(f"{flag} was given, but --conditions ({','.join(conditions)}) has none of "
                          f"{', '.join(wanted)}; add {wanted[0]} to --conditions (or leave {flag} out)")
    return {name: r for name, r in records.items() if name in used}


def _planned(cfg: EvaluateConfig, bench: Benchmark,
             conditions: list[str]) -> tuple[EvaluateConfig, list[Any], list[Any], list[str]]:
    """The run's jobs and skipped conversations, with ``cfg.conditions`` set to the conditions that run, and the
    lines saying which were left out as empty."""
    try:
        refuse_missing(bench, conditions)
    except SuiteError as exc:
        raise ConfigError(str(exc)) from None
    jobs, skipped = plan_jobs(bench, conditions, PlanSettings(shared_turn1=cfg.shared_turn1))
    if cfg.conditions_all:          # `all`: a condition left out of the default set joins where the dataset has it
        conditions = [c for c in conditions if c in default_conditions() or any(j.condition == c for j in jobs)]
        skipped = [k for k in skipped if k.condition in conditions]
    refuse_empty_conditions(bench, conditions, jobs, skipped)
    conditions, left_out = leave_out_empty(bench, cfg, conditions, jobs)
    return dataclasses.replace(cfg, conditions=tuple(conditions)), jobs, skipped, left_out


def _say_plan(say: Callable[[str], None], cfg: EvaluateConfig, bench: Benchmark, run: RunFolder,
              jobs: Sequence[Any], records: dict[str, Any], left_out: Sequence[str], notes: Sequence[str]) -> None:
    for line in left_out:
        say(line)
    say(f"run folder: {run.path}")
    subset = f", subset {cfg.subset}" if cfg.subset not in (None, "full") else ""
    say(f"dataset: {bench.source} ({len(bench.queries)} queries, {len(jobs)} conversations to run{subset})")
    for note in notes:
        say(f"dataset note: {note}")
    for name, record in records.items():          # what each suite's own inputs hold, in its words
        if record.get("summary"):
            say(f"{name}: {record['summary']}")


def _endpoint_configs(cfg: EvaluateConfig, roles: dict[str, RoleChoice], local: set[str]) -> dict[str, EndpointConfig]:
    """Each role's endpoint; local roles get the embedded model's address once it runs (run.json: "local")."""
    return {role: EndpointConfig(base_url=LOCAL_ENDPOINT if role in local else str(c.endpoint),
                                 model=LOCAL_MODEL_ALIAS if role in local else str(c.model),
                                 api_key_env=str(c.api_key_env), concurrency=cfg.concurrency,
                                 http_client=cfg.http_client,
                                 temperature=cfg.judge_temperature if role == "judge" else c.temperature,
                                 **c.request())
            for role, c in roles.items()}


def judge_endpoints(eps: dict[str, ChatEndpoint]) -> dict[str, ChatEndpoint]:
    """The judge roles' own judges among a command's endpoints (by role: ``ben_util_judge``)."""
    return {r.role: eps[r.role] for r in judge_roles() if r.role in eps}


def _new_meta(cfg: EvaluateConfig, bench: Benchmark, configs: dict[str, EndpointConfig], roles: dict[str, RoleChoice],
              local: set[str], skipped: Sequence[Any], configured: Sequence[Configured], user_turns: bool,
              records: dict[str, Any]) -> RunMeta:
    meta = new_run_meta(cfg, bench, configs, local, skipped)
    for made in configured:            # run.json keys a suite sets, by their name on disk
        meta.extras.update(made.meta or {})
    meta.no_user_turns = not user_turns
    for role, choice in roles.items():
        if choice.pool:
            meta.roles[role] = dataclasses.replace(meta.roles[role], pool=(configs[role].base_url, *choice.pool))
    meta.suites.update(records)
    return meta


def _print_cost_table(out: Output, cfg: EvaluateConfig, bench: Benchmark, jobs: Sequence[Any], meta: RunMeta,
                      run: RunFolder) -> None:
    design = DesignView(jobs, power_from_runs(cfg.power_from), cfg.detect)
    try:                                 # what this run still has to do; reads, never writes
        table = run_cost_table(bench, jobs, meta, run if run.exists() else None, cfg.prices,
                               as_json=cfg.dry_run_json, design=design)
    except ValueError as exc:            # a bad --price
        raise ConfigError(str(exc)) from None
    for line in [json.dumps(table)] if cfg.dry_run_json else table:
        out.info(line)


def power_from_runs(folders: Sequence[Path]) -> list[Results]:
    """The results of the run folders ``--power-from`` names (their spreads feed the dry run's power table); a
    folder without a readable results.json is one line."""
    out = []
    for folder in folders:
        run = RunFolder(folder)
        if not run.results_file.is_file():
            raise ConfigError(f"--power-from {folder}: no {run.results_file.name} there (a finished run folder, "
                              f"reported: `carryon-eval report {folder}`)")
        try:
            out.append(Results.from_json(json.loads(run.results_file.read_text(encoding="utf-8"))))
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise ConfigError(f"--power-from {folder}: unreadable {run.results_file.name} ({exc})") from None
    return out


async def _started_endpoints(cfg: EvaluateConfig, session: Session, run: RunFolder, meta: RunMeta,
                             configs: dict[str, EndpointConfig], roles: dict[str, RoleChoice],
                             local: set[str]) -> tuple[dict[str, ChatEndpoint], RunMeta]:
    """Every role checked before anything is generated or written (no cache yet: nothing lands in RUNDIR), then
    the run started and each role's endpoint (pooled, budgeted) made."""
    configs = {role: session.on_local(c) if role in local else c for role, c in configs.items()}
    await check_configs([*configs.values(), *(dataclasses.replace(configs[role], base_url=url)
                                              for role, choice in roles.items() for url in choice.pool)],
                        cfg.model_check)
    meta = _keys_recorded(run, run.start(meta), roles)
    eps: dict[str, ChatEndpoint] = {role: session.role_endpoint(c, roles[role].pool, run, role)
                                    for role, c in configs.items()}
    budget = CallBudget(cfg.max_calls) if cfg.max_calls else None
    if budget is not None:
        eps = {role: budget.wrap(ep) for role, ep in eps.items()}
    return eps, meta


def _keys_recorded(run: RunFolder, meta: RunMeta, roles: dict[str, RoleChoice]) -> RunMeta:
    """run.json records the key variable each role sends (its name, never its value): a resumed run whose roles
    send others now says so."""
    keys = {role: str(c.api_key_env) for role, c in roles.items()}
    if all(meta.roles[role].api_key_env == key for role, key in keys.items() if role in meta.roles):
        return meta
    return run.write_meta(dataclasses.replace(meta, roles={
        role: dataclasses.replace(r, api_key_env=keys.get(role, r.api_key_env)) for role, r in meta.roles.items()}))


async def _phases(cfg: EvaluateConfig, bench: Benchmark, run: RunFolder, meta: RunMeta,
                  eps: dict[str, ChatEndpoint], jobs: Sequence[Any],
                  out: Output, before_report: Callable[[], None] = lambda: None,
                  reports: Reports = InProcess()) -> Results:
    """The planned suites' phases: rollout (judged while it runs), the checks asked for, probes, report
    (``before_report``: e.g. run.json's record of what the endpoints refused, which the report states). A role
    that stops answering ends them; what there is is reported (marked incomplete) before the error goes on."""
    # the report shows the judge this command ran (a run whose scorers have judges of their own: each scorer's)
    judged_by = None if judge_endpoints(eps) else eps["judge"].config.model
    try:
        # The judge takes every conversation the rollout finishes, as it finishes (one pass, app.pipeline).
        conditions = list(dict.fromkeys(j.condition for j in jobs))
        await judge_while_rolling_out(
            lambda done: rollout_phase(bench, run, meta, eps["target"], eps["user"], cfg.concurrency, out, done),
            lambda incoming: judge_phase(bench, run, eps["judge"], meta.judge, cfg.concurrency, out, incoming,
                                         conditions, judges=judge_endpoints(eps)))
        if cfg.checks:
            await check_phase(cfg.checks, bench, run, eps["judge"], cfg.concurrency, out, judges=judge_endpoints(eps))
    except (EndpointGone, RoleFailed, CallBudgetSpent) as exc:   # a role stopped answering (the judge's failed
        # calls are counted instead), or the --max-calls budget is spent: a resumable stop
        await _report_what_there_is(bench, run, out, judged_by, reports, stopped_note(exc))
        raise
    for suite in selected(meta.conditions):
        for probe in suite.probes:             # calls that depend on the verdicts (e.g. the risk probe)
            out.info(await probe.run(ProbeContext(run, eps[probe.role], judged_by, cfg.concurrency, bench)))
    before_report()
    return await reports.write(bench, run, out, judged_by if judged_by in judges_present(run) else None,
                               BootstrapChoice(cfg.bootstrap_resamples, cfg.bootstrap_seed))


async def _report_what_there_is(bench: Benchmark, run: RunFolder, out: Output, judge: Optional[str],
                                reports: Reports, why: str) -> None:
    """results.json and the report of a run that stopped (marked incomplete, ``why`` among its notes), when there is
    anything to report."""
    if not run.transcripts():
        return
    present = judges_present(run)
    if has_judge_roles(run):             # each scorer's own judge
        judge = None
    await reports.write(bench, run, out, judge if judge in present else (present[0] if len(present) == 1 else None),
                        BootstrapChoice(), notes=[why])


def stopped_note(exc: Exception) -> str:
    """Why the command stopped before the end, as results.json says it (no machine path: the crash's log is not
    named there)."""
    what = exc.public() if isinstance(exc, LocalServerCrashed) else str(exc)
    return f"STOPPED: {what}; this report stands on what was done before (rerun the same command to resume)"


def open_run(run: RunFolder, out: Output, dataset: Optional[str] = None) -> tuple[RunFolder, RunMeta, Benchmark]:
    """carryon_eval.suite.reopen.open_run, its subset error a ConfigError (one line)."""
    try:
        return reopen_run(run, out, dataset)
    except SubsetError as exc:
        raise ConfigError(str(exc)) from None


async def continue_rollout(opts: RunOptions, out: Output) -> None:
    """`carryon-eval rollout RUNDIR`: finish the rollout of a run folder with the settings in its run.json."""
    async with Session(out, model_check=opts.model_check, give_up_after=opts.give_up_after) as session:
        run, meta, bench = open_run(RunFolder(opts.rundir), out)
        session.hold(run, "carryon-eval rollout")
        target = session.role_config(meta, "target", endpoint=opts.target_endpoint, api_key_env=opts.target_api_key_env,
                                     concurrency=opts.concurrency, http_client=opts.http_client)
        user = session.role_config(meta, "user", endpoint=opts.user_endpoint, api_key_env=opts.user_api_key_env,
                                   key_option="--user-api-key-env", concurrency=opts.concurrency,
                                   http_client=opts.http_client)
        run.prepare()
        eps: list[ChatEndpoint] = [session.watched(session.endpoint(target, run, "target"), "target"),
                                   session.watched(session.endpoint(user, run, "user"), "user")]
        await check_endpoints(eps)
        if opts.max_calls:
            budget = CallBudget(opts.max_calls)
            eps = [budget.wrap(ep) for ep in eps]
        await rollout_phase(bench, run, meta, eps[0], eps[1], opts.concurrency, out)
        session.record_sent(run)
        session.print_usage()


async def _checked_judge(session: Session, run: RunFolder, meta: RunMeta,
                         opts: RunOptions) -> tuple[ChatEndpoint, dict[str, ChatEndpoint]]:
    """The run's judge (as run.json records it, with what this command changes) and the judge roles' own judges
    (those run.json records, and those this command gives), each checked before anything is asked."""
    cfg = session.role_config(meta, "judge", endpoint=opts.judge.endpoint, model=opts.judge.model,
                              api_key_env=opts.judge.api_key_env, key_option="--judge-api-key-env",
                              concurrency=opts.concurrency,
                              http_client=opts.http_client, temperature=opts.judge_temperature,
                              **opts.judge.request())
    own = {r.role: _role_judge_config(session, meta, opts, r.role, cfg) for r in judge_roles()
           if r.role in meta.roles or r.role in opts.judges}
    await check_configs([cfg, *own.values()], session.model_check)
    budget = CallBudget(opts.max_calls) if opts.max_calls else None

    def made(config: EndpointConfig, role: str) -> ChatEndpoint:
        ep = session.watched(session.endpoint(config, run, role), role)
        return budget.wrap(ep) if budget is not None else ep
    return made(cfg, "judge"), {role: made(c, role) for role, c in own.items()}


def _role_judge_config(session: Session, meta: RunMeta, opts: RunOptions, role: str,
                       judge: EndpointConfig) -> EndpointConfig:
    """One judge role's judge on a run folder: what this command gives, else what run.json records for it, else
    the run's judge (``judge``: as this command calls it). Its key: its own, else the recorded one, else the
    judge's when it calls the judge's endpoint (a key goes only to the endpoint it was given for)."""
    given = opts.judges.get(role) or RoleChoice()
    recorded = meta.roles.get(role)
    if recorded is not None:
        flag = next(r.flag for r in judge_roles() if r.role == role)
        return session.role_config(meta, role, endpoint=given.endpoint, model=given.model,
                                   api_key_env=given.api_key_env, key_option=f"{flag}-api-key-env",
                                   concurrency=opts.concurrency,
                                   http_client=opts.http_client, temperature=given.temperature, **given.request())
    base = RoleChoice(judge.base_url, judge.model, judge.api_key_env, reasoning_effort=judge.reasoning_effort,
                      system_prompt=judge.system_prompt, extra_body=judge.extra_body)
    chosen, _ = resolve_judges({role: given}, {"judge": base}, set(), judge.temperature)
    c = chosen[role]
    if given.endpoint is not None and is_local(given.endpoint):
        return session.on_local(dataclasses.replace(judge, temperature=c.temperature, **c.request()))
    return dataclasses.replace(judge, base_url=str(c.endpoint), model=str(c.model), api_key_env=str(c.api_key_env),
                               temperature=c.temperature, **c.request())


async def judge_folder(opts: RunOptions, out: Output) -> None:
    """`carryon-eval judge RUNDIR`: (re-)judge a run folder; cached verdicts are not asked again."""
    async with Session(out, model_check=opts.model_check, give_up_after=opts.give_up_after) as session:
        run, meta, bench = open_run(RunFolder(opts.rundir), out)
        session.hold(run, "carryon-eval judge")
        max_tokens = opts.judge_max_tokens or meta.judge.max_tokens
        given = {name: value for name, value in opts.scoring.items() if value is not None}
        scoring = meta.judge.given(given)            # each wing setting: this command's where given, else the run's
        why = refused_alone(options.EVALUATE, scoring, given=set(given) & set(scoring))
        if why:
            raise ConfigError(why)
        jobs = run_jobs(bench, meta)
        if opts.batch_export is not None and opts.batch_import:
            raise ConfigError("--batch-export and --batch-import do not go together: export, run the batch, "
                              "then import its results in a second command")
        if (opts.batch_export is not None or opts.batch_import) and (opts.judges or any(
                r.role in meta.roles for r in judge_roles())):
            raise ConfigError("--batch-export and --batch-import take one judge model; this run's scorers have judges "
                              "of their own (run.json roles *_judge): judge it live")
        if opts.live_rest and not opts.batch_import:
            raise ConfigError("--live-rest goes with --batch-import (without it every judge call is live anyway)")
        if opts.batch_export is not None:
            model = opts.judge.model or meta.role("judge").model or LOCAL_MODEL_ALIAS
            exported = await export_requests(run, bench, model, opts.batch_export, settings=JudgeSettings(
                max_tokens=max_tokens, judge_format=opts.judge_format or meta.judge.judge_format, scoring=scoring),
                jobs=jobs,
                config=meta.role("judge").config(base_url="batch", model=model, temperature=opts.judge_temperature,
                                                 **opts.judge.request()))
            out.info(f"batch: {exported.requests} judge request(s) not in the cache, in {len(exported.files)} "
                     f"file(s) in {exported.folder} ({MANIFEST}); run them, then `carryon-eval judge {run.path} "
                     "--batch-import RESULT.jsonl...`")
            return
        judge_format = opts.judge_format or meta.judge.judge_format
        model = opts.judge.model or meta.role("judge").model or LOCAL_MODEL_ALIAS
        cache_only: Optional[ChatEndpoint] = None
        settings = JudgeSettings(max_tokens=max_tokens, judge_format=judge_format, scoring=scoring)
        if opts.batch_import:
            asks = dict(settings=settings, jobs=jobs, config=meta.role("judge").config(  # the export's keys
                base_url="batch", model=model, temperature=opts.judge_temperature, **opts.judge.request()))
            expected = set(await pending_requests(run, bench, model, **asks))
            cache = ResponseCache(run.cache_dir)
            imported = import_results(opts.batch_import, cache, expected)
            cache.close()
            left = len(await pending_requests(run, bench, model, **asks))
            out.info(f"batch: {imported.stored} answer(s) stored in the cache, {imported.failed} failed"
                     + (" (asked again now, live)" if opts.live_rest else ""))
            if left and not opts.live_rest:
                raise BatchError(f"{left} judge request(s) of this run have no answer in the result file(s) "
                                 "(failed lines, or not in them); export them with --batch-export and run that "
                                 "batch, or add --live-rest to ask them live")
            if not opts.live_rest:               # judged from the cache alone: nothing is asked live
                cache_only = ExportingEndpoint(EndpointConfig(base_url="batch", model=model), cache)
        judge, own = (cache_only, {}) if cache_only is not None else await _checked_judge(session, run, meta, opts)
        judged = await judge_phase(bench, run, judge, settings, opts.concurrency, out, judges=own)
        session.record_sent(run)
        session.print_usage()
    if not judged.complete:
        missing = sum(t.missing for t in judged.tallies.values())
        raise RunIncomplete(f"the judge phase is incomplete: {missing} judgment(s) missing after failed calls; "
                            "rerun the same command to resume")


async def check_folder(name: str, opts: RunOptions, out: Output) -> None:
    """`carryon-eval NAME RUNDIR`: a suite's check of that name (Suite.checks) on a run folder."""
    async with Session(out, model_check=opts.model_check, give_up_after=opts.give_up_after) as session:
        run, meta, bench = open_run(RunFolder(opts.rundir), out)
        session.hold(run, f"carryon-eval {name}")
        judge, own = await _checked_judge(session, run, meta, opts)
        await check_phase((name,), bench, run, judge, opts.concurrency, out, judges=own)
        session.print_usage()


async def export_folder(run: RunFolder, dest: Path, out: Output, judge: Optional[str] = None,
                        fmt: Optional[str] = None) -> None:
    """`carryon-eval export RUNDIR --format NAME --out DIR`: a suite's replies and judgments in its reference's
    layout, read from the run's shared judgment files."""
    run, meta, bench = open_run(run, out)
    formats = exporters()
    name = fmt or next(iter(formats))
    if name not in formats:
        raise ConfigError(f"unknown export format {name!r}; expected one of {', '.join(formats)}")
    if name not in meta.suites and not any(c in meta.conditions for c in suites_named(name)):
        raise ConfigError(f"{run.path} has no {name} condition (run.json conditions: {', '.join(meta.conditions)})")
    try:
        written = formats[name](suite_inputs(run, bench, judge), dest)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for path in written.values():
        out.info(f"wrote {path}")


def suites_named(name: str) -> tuple[str, ...]:
    return next((x.conditions for x in suites() if x.name == name), ())


async def report_folder(run: RunFolder, out: Output, judge: Optional[str] = None,
                        bootstrap: BootstrapChoice = BootstrapChoice(), dataset: Optional[str] = None) -> None:
    """`carryon-eval report RUNDIR [--judge NAME] [--dataset DIR]`: results.json, table.md, plots and report.html
    from its judgments (those of judge model NAME when several judged the run; ``dataset``: where its dataset is
    now, checked against run.json's content hashes)."""
    run, meta, bench = open_run(run, out, dataset)
    with hold(run.path, "carryon-eval report"):
        results = report_phase(bench, run, out, judge, bootstrap)
    require_scored(results, run)
    require_complete(results, run)
