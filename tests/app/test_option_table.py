"""One option table (carryon_eval.app.options): the command line, the Python API and EvaluateConfig read the same
names, defaults and choices, and the utility mode and judge format have one check (JudgeSettings)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest

from carryon_eval.api import evaluate_config as api_config
from carryon_eval.app import options
from carryon_eval.app.config import ConfigError, EvaluateConfig
from carryon_eval.cli import cli
from carryon_eval.cli import evaluate_config as cli_config
from carryon_eval.suite import default_conditions, suite_options


def given_options() -> list[click.Option]:
    """Every option of `carryon-eval` a user gives (not --help, --version, --verbose, --progress-interval: those
    set up the process, not the run; not the hidden old spellings)."""
    return [p for p in cli.params if isinstance(p, click.Option) and p.expose_value and not p.hidden]


def test_every_cli_option_is_an_api_keyword_with_the_same_default_and_choices():
    suites = {o.key: o for o in suite_options()}
    ctx = cli.make_context("carryon-eval", [])
    seen = set()
    for param in given_options():
        keyword = param.opts[0].lstrip("-").replace("-", "_")      # the long flag, underscored
        if keyword in suites:                                      # a suite's own option (its record has them)
            assert param.get_default(ctx) == suites[keyword].default
            continue
        option = options.BY_KEYWORD[keyword]
        seen.add(keyword)
        assert param.name == option.name, keyword
        if option.kind == "flag":                                  # not given: the option's field default
            assert (param.flag_value if option.flag_value is not None else True) == option.given(True), keyword
            assert option.given(False) == option.default, keyword
        elif option.kind == "conditions":                          # not given: the suites' default set
            assert ctx.params[param.name] == list(default_conditions())
        else:
            default = ctx.params[param.name]                       # what the CLI reads when it is not given
            assert (None if default in ((), None) else default) == option.default, keyword
        assert tuple(getattr(param.type, "choices", ())) == option.choices, keyword
        # the API takes the keyword, and its default (or "not given") builds the config the CLI builds without it
        not_given = False if option.kind == "flag" else option.default
        assert api_config(**{keyword: not_given}) == api_config(), keyword
    assert seen == {o.keyword for o in options.EVALUATE if not o.hidden and o is not options.SUITE_OPTIONS}


def test_without_options_the_api_and_the_cli_build_the_same_config():
    ctx = cli.make_context("carryon-eval", [])
    assert api_config() == cli_config(**ctx.params)
    ctx = cli.make_context("carryon-eval", ["--endpoint", "http://a/v1", "--model", "m", "--user-temperature",
                                            "default", "--judge-extra-body", '{"top_p": 0.5}', "--seed", "3",
                                            "--no-model-check", "--give-up-after", "5", "--http-client", "httpx",
                                            "--max-tokens", "9", "--subset", "quick", "--utility-mode", "logprob"])
    cfg = api_config(endpoint="http://a/v1", model="m", user_temperature="default", judge_extra_body={"top_p": 0.5},
                     seed=3, no_model_check=True, give_up_after=5, http_client="httpx", max_tokens=9, subset="quick",
                     utility_mode="logprob")
    assert cfg == cli_config(**ctx.params)
    assert cfg.utility_mode == "logprobs" and cfg.max_tokens == 9 and cfg.judge.extra_body == {"top_p": 0.5}


def test_every_entry_sets_a_field_of_the_config_record():
    """An entry is an EvaluateConfig field, a role's (its endpoint options and request options), a suite's
    judge setting (a key of the record's ``scoring``), a scorer's own judge's (a key of the record's ``judges``) or
    a suite's check (a name of the record's ``checks``)."""
    from carryon_eval.app.config import ROLES, TARGET_FIELDS
    from carryon_eval.option import REQUEST_OPTIONS
    from carryon_eval.run.records import SCORING_SETTINGS
    from carryon_eval.suite import judge_roles

    fields = {f.name for f in dataclasses.fields(EvaluateConfig)} | set(SCORING_SETTINGS)
    roles = {name for role in ROLES for name in options.role_names(role)}
    requests = {f"{role}_{name}" for role in ROLES for name in REQUEST_OPTIONS}
    judges = {name for r in judge_roles() for name in options.judge_role_names(r.role)}
    assert options.judge_names() <= set(SCORING_SETTINGS)
    checks = options.check_names()
    assert "fidelity" in checks                     # CarryOnBench's move-fidelity check: --fidelity
    for option in options.EVALUATE:
        name = TARGET_FIELDS.get(option.name, option.name)
        assert name in fields | roles | requests | judges | checks, option.flag


def test_a_check_is_asked_for_by_its_option_and_read_back_by_name():
    """--fidelity (a suite's check, Suite.checks) lands in EvaluateConfig.checks; ``cfg.fidelity`` still reads it."""
    from carryon_eval.api import evaluate_config

    asked, not_asked = evaluate_config(fidelity=True), evaluate_config()
    assert (asked.checks, asked.fidelity) == (("fidelity",), True)
    assert (not_asked.checks, not_asked.fidelity) == ((), False)


def test_the_config_records_defaults_are_the_tables():
    fields = {f.name: f.default for f in dataclasses.fields(EvaluateConfig)}
    for option in options.EVALUATE:
        if option.name in fields and option.default is not None:
            assert fields[option.name] == option.default, option.name
    assert EvaluateConfig().target.api_key_env == options.default("api_key_env")


@pytest.mark.parametrize("keyword, value, message", [
    ("utility_mode", "probs", "utility_mode: expected one of text, logprob, logprobs, got 'probs'"),
    ("judge_format", "xml", "judge_format: expected one of json_schema, text, got 'xml'"),
    ("http_client", "curl", "http_client: expected one of aiohttp, httpx, got 'curl'"),
    ("subset", "half", "subset: expected one of full, quick, got 'half'"),
    ("concurrency", 0, "concurrency: expected a whole number >= 1, got 0"),
    ("give_up_after", 0.5, "give_up_after: expected a number of seconds >= 1, got 0.5"),
    ("judge_temperature", "-1", "judge_temperature: expected a number in 0-2 or 'default'"),
    ("target_extra_body", "[1]", "target_extra_body: expected a JSON object, got list"),
])
def test_a_bad_value_is_one_line_naming_the_keyword(keyword, value, message):
    with pytest.raises(ConfigError) as err:
        api_config(**{keyword: value})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_cli_refuses_what_the_api_refuses(tmp_path: Path):
    from click.testing import CliRunner

    res = CliRunner().invoke(cli, ["--utility-mode", "probs", "--out", str(tmp_path / "run")])
    assert res.exit_code == 2 and "'probs' is not one of 'text', 'logprob', 'logprobs'" in res.output
    assert not (tmp_path / "run").exists()


def test_the_cli_shows_every_entry_of_the_table_in_its_order():
    """The CLI's options are made from the table alone: adding an entry adds the option (and the API keyword)."""
    from click.testing import CliRunner

    text = CliRunner().invoke(cli, ["--help"], terminal_width=200).output
    flags = [o.flag for o in options.EVALUATE if not o.hidden]
    where = [text.index(f"  {flag} ") if f"  {flag} " in text else text.index(f"  {flag},") for flag in flags]
    assert where == sorted(where)
