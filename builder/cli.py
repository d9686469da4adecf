"""`carryon-build`: build a CarryOnBench dataset folder from a source (CASE-Bench, OpenSafeIntent), and verify one."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional

import click

from carryon_eval import defaults
from carryon_eval.cli_common import (REQUEST_OPTIONS, OneLineGroup, UsageError, concurrency_option, endpoint_options,
                                     request_options, temperature_option_value, timeout_option, verbose_option)
from carryon_eval.progress import progress_interval_option

from .flows import DEFAULT_SEED
from .limits import MAX_ITEMS, MIN_ITEMS
from .stages import ROLES as _STAGE_ROLES

ROLES = tuple(dict.fromkeys(_STAGE_ROLES))      # each role once (several stages may share one)


if TYPE_CHECKING:
    from .llm_config import LLMConfig
    from .roles import RolePlan
    from .sources import Source


class BuildError(UsageError):
    """One line on stderr, `carryon-build: error: ...`, then exit 2."""
    prog = "carryon-build"


INCOMPLETE = 4      # exit code: the embedded server crashed mid-build (the response cache keeps what was done)


class BuildGroup(OneLineGroup):
    error = BuildError


def fail(message: str) -> NoReturn:
    raise BuildError(message)


def _use_recipe(ctx: click.Context, param: click.Parameter, value: Optional[Path]) -> Optional[Path]:
    """--recipe FILE (eager): its [build] table becomes the defaults of the other options, so flags given
    on the command line still override it."""
    if value is None:
        return None
    from .recipe import RecipeError, load_recipe
    try:
        meta, options = load_recipe(value, [p.name for p in ctx.command.params if p.name])
    except RecipeError as exc:
        fail(str(exc))
    ctx.default_map = {**(ctx.default_map or {}), **options}
    ctx.meta["carryon_recipe"] = (meta, value)
    return value


def _per_role(ctx: click.Context, name: str, given: tuple[str, ...]) -> tuple[str, ...]:
    """ROLE=VALUE options: the recipe's entries for the roles the command line does not name, then the
    command line's (a flag overrides one role, not the recipe's whole list)."""
    recipe = (ctx.default_map or {}).get(name)
    if not recipe or ctx.get_parameter_source(name) != click.core.ParameterSource.COMMANDLINE:
        return given
    named = {g.partition("=")[0].strip().replace("-", "_") for g in given}
    return (*(r for r in recipe if r.partition("=")[0].strip().replace("-", "_") not in named), *given)


def _version() -> str:
    from . import BUILDER_VERSION
    return BUILDER_VERSION


@click.group(cls=BuildGroup, context_settings={"help_option_names": ["-h", "--help"]})
@verbose_option
@click.version_option(_version(), prog_name="carryon-build")
def cli() -> None:
    """Build the CarryOnBench dataset (queries, checklists, flows, conversations) and verify releases."""


_BUILD_EPILOG = """\b
LLM stages (paper §3.1): intents -> oracle_answers -> harm_filter -> decompose -> merge -> item_filter.
Roles: intent-writer, generator, harm-classifier, decomposer, merger, item-filter.
  --endpoint URL --model NAME          default endpoint and model of every role
  --ROLE-endpoint URL                  one role elsewhere (e.g. --harm-classifier-endpoint URL)
  --ROLE-model NAME                    one role's model (e.g. --merger-model NAME)
  --ROLE-api-key-env NAME              one role's key variable: a role on another URL than --endpoint's
                                       gets no --api-key-env key (a key goes only to its own endpoint)
  --ROLE-max-tokens N, --ROLE-temperature T|default, --ROLE-reasoning-effort LEVEL,
  --ROLE-system-prompt TEXT|@FILE, --ROLE-extra-body JSON
                                       one role's requests (named as in carryon-eval)
  --generator URL=MODEL                a generator (repeatable; the paper uses 5)
  --generator-model NAME               a generator at the generator role's endpoint (repeatable;
                                       a model listed twice samples twice, with different seeds)
Without --generator/--generator-model there is one generator (the generator role's model).
URL "local" is the embedded Gemma 3 270M (llama.cpp; a smoke test, not a measurement).

\b
Examples:
  carryon-build build --source CASEBench_data.json --out ds --endpoint http://127.0.0.1:8000/v1 --model qwen
  carryon-build build --source CASEBench_data.json --out ds --endpoint https://api.openai.com/v1 \\
      --model gpt-4o --generator-model gpt-4o --generator-model gpt-4o-mini \\
      --generator http://127.0.0.1:8000/v1=Qwen/Qwen3-32B --generator-api-key-env '' \\
      --harm-classifier-endpoint http://127.0.0.1:8001/v1 --harm-classifier-model allenai/wildguard \\
      --harm-classifier-api-key-env '' --harm-classifier-style wildguard
  carryon-build build --source CASEBench_data.json --out ds --endpoint local --limit 2 --max-tokens 160
"""


def _per_role_options(fn: Any) -> Any:
    """--ROLE-endpoint, --ROLE-model and the request options of every role (the generator's model option is
    --generator-model, which lists generators, and its temperature --generator-temperature)."""
    for role in reversed(ROLES):
        flag = role.replace("_", "-")
        fn = request_options(role, what=f"the {flag} role", skip=("temperature",) if role == "generator" else ())(fn)
        if role != "generator":
            fn = click.option(f"--{flag}-model", f"{role}_model", metavar="NAME",
                              help=f"Model of the {flag} role [default: --model].")(fn)
        fn = click.option(f"--{flag}-api-key-env", f"{role}_api_key_env", metavar="NAME",
                          help=f"Environment variable of the {flag} role's key" + (" (and of a --generator "
                          "URL=MODEL whose URL no other key was given for)" if role == "generator" else "") +
                          " [default: the key given for its URL: --api-key-env's on --endpoint's; '' sends "
                          "none].")(fn)
        fn = click.option(f"--{flag}-endpoint", f"{role}_endpoint", metavar="URL|local",
                          help=f"Endpoint of the {flag} role [default: --endpoint].")(fn)
    return fn


def _with_role_flags(assignments: tuple[str, ...], per_role: dict[str, Any], what: str) -> tuple[str, ...]:
    """The ROLE=VALUE list with each --ROLE-<what> given on top (it replaces that role's entry)."""
    flags = {role: per_role.get(f"{role}_{what}") for role in ROLES}
    flags = {role: value for role, value in flags.items() if value is not None}
    kept = tuple(a for a in assignments if a.partition("=")[0].strip().replace("-", "_") not in flags)
    return (*kept, *(f"{role}={value}" for role, value in flags.items()))


def _check_build_options(source: Optional[Path], out: Optional[Path], *, min_items: int, max_items: int,
                         dry_run: bool, force: bool) -> None:
    """One line and exit 2 for options that cannot build, before any source is read or model called."""
    from .dataset_folder import check_out_folder

    if min_items > max_items:
        fail(f"--min-items {min_items} is more than --max-items {max_items}")
    if dry_run:
        return
    if source is None or out is None:
        fail("missing option: pass --source FILE and --out DIR (only --dry-run works without them)")
    try:
        check_out_folder(out, force)
    except FileExistsError as exc:
        fail(str(exc))
    _check_writable(out)


def _check_writable(out: Path) -> None:
    """One line when --out cannot be made: under a file, or in a folder this user cannot write to."""
    import os
    import tempfile

    parent = out.absolute().parent
    existing = next(p for p in (parent, *parent.parents) if p.exists())
    if not existing.is_dir():
        fail(f"--out {out}: {existing} is a file, not a folder; choose another --out")
    try:
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".carryon-write-check-"))
    except OSError as exc:
        fail(f"--out {out}: cannot write in {existing} ({exc.strerror or exc}); choose another --out")


@cli.command(epilog=_BUILD_EPILOG)
@click.option("--recipe", type=click.Path(path_type=Path), is_eager=True, callback=_use_recipe, expose_value=False,
              help="A build recipe (TOML, e.g. releases/recipes/paper.toml): its [build] options are the defaults; "
                   "flags override them.")
@click.option("--source", "source", type=click.Path(path_type=Path),
              help="The source: CASE-Bench's CASEBench_data.json, or an OpenSafeIntent release folder (or its "
                   "dataset.json). Required, except for --dry-run (which then plans the paper's 398 queries at "
                   "typical lengths).")
@click.option("--source-format", type=click.Choice(["auto", "casebench", "opensafeintent"]), default="auto",
              show_default=True,
              help="How to read --source; auto: opensafeintent for a release folder or its dataset.json, "
                   "else casebench.")
@click.option("--out", type=click.Path(path_type=Path), help="Dataset folder to write (required, except for --dry-run).")
@click.option("--no-llm", is_flag=True, help="Skip the LLM stages: empty benign_intent, no checklist rows.")
@click.option("--seed", default=DEFAULT_SEED, show_default=True, help="Seed of the flow pool and the plan.")
@click.option("--limit", type=click.IntRange(min=1), help="Build only the first N selected queries.")
@click.option("--release", default=None, help="Release name written into MANIFEST.json and the card [default: the "
                                              "source's release line: open-v1.0.0 for OpenSafeIntent, "
                                              "v<builder version> for CASE-Bench].")
@click.option("--hub-repo", default=None, metavar="ORG/NAME",
              help="The Hub dataset this release will be published to (`carryon-build publish --repo-id`), when "
                   "known: MANIFEST.json records it, croissant.json's url, CITATION.cff and the card's citation name "
                   "it, and publish refuses another repository.")
@endpoint_options(api_key_default=defaults.API_KEY_ENV,
                  endpoint_help="Default OpenAI-compatible endpoint of every role (base URL, usually ending in /v1), "
                                "or 'local' for the embedded model.",
                  model_help="Default model of every role (with --endpoint local: gemma-3-270m).",
                  key_help="Environment variable holding the API key (the key is never written anywhere).")
@click.option("--role-endpoint", "role_endpoints", multiple=True, metavar="ROLE=URL", hidden=True,
              help="Endpoint of one role (repeatable); the older spelling of --ROLE-endpoint.")
@click.option("--role-model", "role_models", multiple=True, metavar="ROLE=NAME", hidden=True,
              help="Model of one role (repeatable); the older spelling of --ROLE-model.")
@_per_role_options
@click.option("--generator", "generators", multiple=True, metavar="URL=MODEL",
              help="A generator of oracle answers at its own endpoint (repeatable).")
@click.option("--generator-model", "generator_models", multiple=True, metavar="NAME",
              help="A generator at the generator role's endpoint (repeatable).")
@click.option("--harm-classifier-style", type=click.Choice(["judge", "wildguard"]), default="judge",
              show_default=True,
              help="judge: an LLM judge prompt; wildguard: WildGuard's input format, parsing 'Harmful response: "
                   "yes/no'.")
@click.option("--cache-dir", type=click.Path(path_type=Path),
              help="Response cache (default: OUT.cache beside --out). A rerun after a crash repeats no "
                   "finished request.")
@click.option("--max-tokens", type=click.IntRange(min=16),
              help="Cap every stage's max_tokens (e.g. 160 for the small local model).")
@concurrency_option(help="Requests in flight per endpoint and model (the local model: 1).")
@timeout_option("--request-timeout")
@click.option("--structured-output", type=click.Choice(["json_schema", "json_object", "none"]),
              default="json_schema", show_default=True,
              help="How to ask remote endpoints for JSON first (json_object: llama.cpp-style with a schema). "
                   "Each endpoint's client learns once which form it takes (json_schema, then json_object with "
                   "the schema, then none); MANIFEST.json records the form each stage's replies came with.")
@click.option("--min-items", type=click.IntRange(min=1), default=MIN_ITEMS, show_default=True,
              help="A query whose checklist has fewer items (after merging, after the item filter) is dropped. "
                   "Lower it only for a smoke test with a small model (the card says so), e.g. 1 with --endpoint local.")
@click.option("--max-items", type=click.IntRange(min=1), default=MAX_ITEMS, show_default=True,
              help="The merged checklist is cut to this many items (the paper's 7-23 describes its result).")
@click.option("--min-safe-rate", type=click.FloatRange(0.0, 1.0),
              help="Keep only queries whose safe context at least this share of CASE-Bench's annotators judged "
                   "safe (safe_rate), e.g. 0.5 [default: every query].")
@click.option("--generator-temperature", default="0.7", show_default=True, metavar="T|default",
              callback=temperature_option_value,
              help="Sampling temperature of the generators (each with its own seed); 'default': none is sent.")
@click.option("--dry-run", is_flag=True,
              help="Print the calls and estimated tokens per stage, call no endpoint, exit 0.")
@click.option("--force", is_flag=True,
              help="Rebuild into an --out folder that holds files no build wrote (they are kept, not deleted).")
@verbose_option
@progress_interval_option
@click.pass_context
def build(ctx: click.Context, source: Optional[Path], source_format: str, out: Optional[Path], no_llm: bool, seed: int,
          limit: Optional[int], release: Optional[str], endpoint: Optional[str], model: Optional[str],
          role_endpoints: tuple[str, ...], role_models: tuple[str, ...], generators: tuple[str, ...],
          generator_models: tuple[str, ...], harm_classifier_style: str, api_key_env: str,
          cache_dir: Optional[Path], max_tokens: Optional[int], concurrency: int, request_timeout: float,
          structured_output: str, min_items: int, max_items: int, min_safe_rate: Optional[float],
          generator_temperature: Any, dry_run: bool, force: bool, hub_repo: Optional[str] = None,
          **per_role: Any) -> None:
    """Build a dataset folder that `datasets.load_dataset(OUT, CONFIG, split="test")` reads offline.

    Runs the LLM stages (benign intents, checklists) with the models given below, or skips them with
    --no-llm. Each distinct endpoint is checked before anything is spent (exit 2 if one fails).
    """
    from . import BUILDER_VERSION

    role_endpoints, role_models = _per_role(ctx, "role_endpoints", role_endpoints), _per_role(ctx, "role_models",
                                                                                            role_models)
    role_endpoints = _with_role_flags(role_endpoints, per_role, "endpoint")
    role_models = _with_role_flags(role_models, per_role, "model")
    request = {role: {name: per_role.get(f"{role}_{name}") for name in REQUEST_OPTIONS} for role in ROLES}
    llm_options = (endpoint or model or role_endpoints or role_models or generators or generator_models)
    _check_build_options(source, out, min_items=min_items, max_items=max_items, dry_run=dry_run, force=force)
    src = _chosen_source(source_format, source, min_safe_rate)
    release = release or src.default_release or f"v{BUILDER_VERSION}"
    _check_hub_repo(hub_repo)
    build_kw: dict[str, Any] = dict(seed=seed, limit=limit, release=release, log=_log, force=force,
                                    min_safe_rate=min_safe_rate, source_format=src.name, hub_repo=hub_repo)
    if no_llm:
        if llm_options or dry_run:
            fail("--no-llm runs no LLM stage: drop the endpoint/model options (and --dry-run)")
        _build_without_llm(source, out, build_kw)
        return

    from .dry_run import NO_ENDPOINT
    from .llm_config import LLMConfig

    if not llm_options:
        fail("the LLM stages need an endpoint: pass --endpoint URL --model NAME (or --endpoint local), or --no-llm")
    if dry_run and endpoint is None:
        endpoint = NO_ENDPOINT         # a dry run calls nothing: show where the endpoint would be
    plan = _role_plan(endpoint=endpoint, model=model, role_endpoints=role_endpoints, role_models=role_models,
                      generators=generators, generator_models=generator_models)
    cache = cache_dir if cache_dir is not None or out is None else out.parent / f"{out.name}.cache"

    keys = _role_keys(plan, endpoint, api_key_env, {role: per_role.get(f"{role}_api_key_env") for role in ROLES})

    def config(local_base_url: Optional[str] = None) -> LLMConfig:
        roles, gens = plan.specs(local_base_url=local_base_url, structured=structured_output,
                                 concurrency=concurrency, timeout=request_timeout, request=request, keys=keys)
        return LLMConfig(roles=roles, generators=gens, harm_classifier_style=harm_classifier_style,
                         api_key_env=api_key_env, cache_dir=cache, max_tokens=max_tokens, min_items=min_items,
                         max_items=max_items, generator_temperature=generator_temperature,
                         skip_stages=src.skip_stages, stage_prompts=dict(src.stage_prompts))

    if dry_run:
        click.echo(dry_run_text(config(), source, limit, ctx.meta.get("carryon_recipe"), src.name))
        return
    assert source is not None and out is not None
    _build_with_llm(source, out, plan, config, cache, build_kw)


def _log(message: str) -> None:
    click.echo(message, err=True)


def _chosen_source(source_format: str, source: Optional[Path], min_safe_rate: Optional[float]) -> "Source":
    """The source record --source-format names (auto: the one whose files SOURCE holds); one line when it
    cannot be, or when --min-safe-rate asks ratings it has not."""
    from .sources import SourceError, detect, get_source

    try:
        src = (get_source(source_format) if source_format != "auto" else
               detect(source) if source is not None else get_source("casebench"))
    except SourceError as exc:
        fail(str(exc))
    if min_safe_rate is not None and not src.has_ratings:
        fail(f"--min-safe-rate: the {src.name} source has no annotator ratings (safe_rate)")
    return src


def _check_hub_repo(hub_repo: Optional[str]) -> None:
    if hub_repo is not None:
        from .publish import REPO_ID

        if not REPO_ID.match(hub_repo):
            fail(f"--hub-repo {hub_repo!r}: expected ORG/NAME (a namespace and a dataset name)")


def _role_plan(**given: Any) -> "RolePlan":
    """Which endpoint and model each role and generator uses; one line when the assignments do not add up."""
    from .roles import RoleError, plan_roles

    try:
        return plan_roles(**given)
    except RoleError as exc:
        fail(str(exc))


def _role_keys(plan: "RolePlan", endpoint: Optional[str], api_key_env: str,
               own: dict[str, Optional[str]]) -> tuple[dict[str, str], list[str]]:
    """Each role's key variable; one line for a role on another URL with no key of its own (builder.roles)."""
    from .roles import RoleError

    try:
        return plan.keys(endpoint=endpoint, api_key_env=api_key_env, own=own)
    except RoleError as exc:
        fail(str(exc))


def _build_without_llm(source: Optional[Path], out: Optional[Path], build_kw: dict[str, Any]) -> None:
    from .pipeline import build as run_build
    from .sources import SourceError

    try:
        run_build(source, out, **build_kw)
    except (SourceError, FileExistsError) as exc:
        fail(str(exc))


def _build_with_llm(source: Path, out: Path, plan: "RolePlan", config: Callable[[Optional[str]], "LLMConfig"],
                    cache: Optional[Path], build_kw: dict[str, Any]) -> None:
    """The build with its LLM stages, on the embedded model when a role needs it (exit 4 when it crashed)."""
    import contextlib

    from carryon_eval.model.client import EndpointError
    from carryon_eval.model.crash import CrashRecord, LocalServerCrashed

    from .llm_run import LLMStageAbort, LLMStages
    from .pipeline import NoQueryKept, build as run_build
    from .sources import SourceError

    with contextlib.ExitStack() as stack:
        local_url = None
        if plan.needs_local:
            from carryon_eval.model.local import LOCAL_MODEL_NOTICE, LocalModelError, LocalModelServer
            click.echo(f"starting the embedded model ... {LOCAL_MODEL_NOTICE}", err=True)
            try:
                server = stack.enter_context(LocalModelServer())
            except LocalModelError as exc:
                fail(str(exc).splitlines()[0])
            local_url = server.base_url
        stages = LLMStages(config(local_url), log=_log, local_server=server if plan.needs_local else None)
        try:
            run_build(source, out, llm_stages=stages, **build_kw)
        except LocalServerCrashed as exc:       # the embedded server died: exit 4, and whether a rerun can help
            CrashRecord(cache).note(exc)
            click.echo(f"carryon-build: {exc}{exc.hint('; rerun the same command to resume from the cache')}",
                       err=True)
            sys.exit(INCOMPLETE)
        except (SourceError, FileExistsError, EndpointError, LLMStageAbort, NoQueryKept) as exc:
            fail(str(exc))
        if plan.needs_local:
            CrashRecord(cache).clear()


def dry_run_text(cfg: "LLMConfig", source: Optional[Path], limit: Optional[int],
                 recipe: Optional[tuple[dict, Path]], source_format: str = "casebench") -> str:
    """The --dry-run plan: of the source's queries, or of the paper's 398 at typical lengths without one."""
    from .dry_run import dry_run_plan, format_dry_run, placeholder_queries
    from .recipe import describe
    from .sources import SourceError, get_source

    head = []
    if recipe is not None:
        head.append(describe(*recipe))
    if source is None:
        queries = placeholder_queries()
        head.append(f"no --source: planning the paper's {len(queries)} queries at typical lengths")
    else:
        src = get_source(source_format)
        try:
            queries = src.select(src.read(src.data_file(source)))
        except SourceError as exc:
            fail(str(exc))
    queries = queries[:limit] if limit is not None else queries
    return "\n".join([*head, format_dry_run(dry_run_plan(queries, cfg), len(queries), len(cfg.generators), cfg)])


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--manifest", type=click.Path(path_type=Path),
              help="Check against this manifest (e.g. releases/v0.1.0/MANIFEST.json, or the folder holding it) "
                   "instead of FOLDER's own.")
def verify(folder: Path, manifest: Optional[Path]) -> None:
    """Recompute hashes, counts, cross-references and flow rules, load every declared config with
    datasets.load_dataset (columns as in the card's field tables); name each mismatch. Without --manifest, FOLDER is
    called a release only when its MANIFEST.json is that release's frozen one (releases/NAME/MANIFEST.json)."""
    from .verify import release_claim, verify_folder

    if manifest is not None and manifest.is_dir():       # the release's folder: its MANIFEST.json
        if not (manifest / "MANIFEST.json").is_file():
            fail(f"--manifest {manifest}: a folder without MANIFEST.json; give a release's MANIFEST.json (or its "
                 "folder, e.g. releases/open-v1.0.0)")
        manifest = manifest / "MANIFEST.json"
    problems, man = verify_folder(folder, manifest)
    for p in problems:
        click.echo(f"MISMATCH {p}")
    if problems:
        click.echo(f"verify: {len(problems)} mismatch(es) in {folder}", err=True)
        sys.exit(1)
    click.echo(f"OK {folder} {release_claim(man, manifest)}: {len(man['files'])} files, "
               f"counts {{{', '.join(f'{k}: {v}' for k, v in man['counts'].items() if isinstance(v, int))}}}")


# Configs without any source text (ids, move names, counts): the only tables a repository may hold.
TEXT_FREE_CONFIGS = ("flows", "conversations")


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--to", "dest", required=True, type=click.Path(path_type=Path), help="e.g. releases/v0.1.0")
@click.option("--manifest-only", is_flag=True, default=False,
              help="Copy MANIFEST.json alone (a release whose source is public: releases/open-v1.0.0).")
def freeze(folder: Path, dest: Path, manifest_only: bool) -> None:
    """Copy a verified build's MANIFEST.json and its text-free tables (flows, conversations) into DEST."""
    import shutil

    from .dataset_folder import parquet_name
    from .verify import verify_folder

    problems, man = verify_folder(folder)
    if problems:
        fail(f"{folder} does not verify ({problems[0]}); rebuild it first")
    if dest.exists() and not dest.is_dir():
        fail(f"--to {dest} is a file; expected a folder to copy the release files into")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / "MANIFEST.json", dest / "MANIFEST.json")
    if manifest_only:
        click.echo(f"froze release {man['release']} into {dest}: MANIFEST.json")
        return
    for config in TEXT_FREE_CONFIGS:
        (dest / parquet_name(config)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / parquet_name(config), dest / parquet_name(config))
    click.echo(f"froze release {man['release']} into {dest}: MANIFEST.json + {', '.join(TEXT_FREE_CONFIGS)}")


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--repo-id", required=True, metavar="ORG/NAME", help="Dataset repository on the Hub.")
@click.option("--tag", required=True, metavar="vX.Y.Z",
              help="The release's tag (vX.Y.Z, or a release line's: open-vX.Y.Z); must be the folder's release.")
@click.option("--private", is_flag=True, help="Create (or switch) the repository private.")
@click.option("--gated", type=click.Choice(["manual", "auto"]), default=None,
              help="Access requests approved by hand (SORRY-Bench's terms) or automatically [default: manual for a "
                   "gated card; an ungated card (an openly licensed source) is published without gating].")
@click.option("--dry-run", is_flag=True, help="Print the plan (files, sizes, operations, gating, tag); call nothing.")
def publish(folder: Path, repo_id: str, tag: str, private: bool, gated: Optional[str], dry_run: bool) -> None:
    """Upload a verified FOLDER to the Hub as one gated commit, tag it, and check the remote file by file.

    The token comes from HF_TOKEN or `hf auth login` and is never printed or written. HF_ENDPOINT selects
    another Hub. Exit 2 on a refusal (folder does not verify, tag exists elsewhere, Hub error), 1 when the
    remote check finds a difference.
    """
    from .publish import PublishError, hub_client, hub_errors, plan_publish, publish as run_publish, scrub

    try:
        plan = plan_publish(folder, repo_id, tag, private=private, gated=gated)
    except PublishError as exc:
        fail(str(exc))
    if dry_run:
        click.echo(plan.describe())
        return
    api = None
    try:
        api = hub_client()
        done = run_publish(api, plan, log=lambda m: click.echo(m, err=True))
    except hub_errors() as exc:
        where = "" if api is None or isinstance(exc, PublishError) else f"the Hub at {api.endpoint}: "
        fail(scrub(where + (" ".join(str(exc).split()) or type(exc).__name__), api))
    for problem in done.problems:
        click.echo(f"MISMATCH remote {problem}")
    if done.problems:
        click.echo(f"publish: the remote revision {tag} differs from the MANIFEST in {len(done.problems)} place(s)",
                   err=True)
        sys.exit(1)
    click.echo(f"OK {repo_id}@{tag} is release {tag} exactly: commit {done.commit}, {len(plan.files)} files, "
               f"gated={plan.gated}")
    click.echo(f"revision: {tag} (commit {done.commit})")
    click.echo(f"url: {done.url}")
    click.echo(done.bibtex)


def main() -> None:
    cli()


if __name__ == "__main__":   # python -m builder.cli
    main()
