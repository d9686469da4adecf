"""Every record written to a run folder or read back from it, typed: run.json, judge.json, results.json.

Readers never walk these files as dicts by string paths: they load the record (`RunMeta.read(path)`,
...) and use its fields. Each record has `to_json()` / `from_json()` and a `schema_version`; the
per-line records of the JSONL files (transcripts, judgments) live in carryon_eval.schema.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from carryon_eval import defaults
from carryon_eval.codec import OMIT_EMPTY, Record, absent, encode, fields_of, omit_if
from carryon_eval.model.endpoint import REQUEST_OPTION_NAMES, EndpointConfig, describe_temperature
from carryon_eval.model.redact import public_url

SCHEMA_VERSION = 1


def _version(d: dict[str, Any]) -> int:
    """A file written before schema_version existed reads as version 1 (run/results.py's)."""
    return int(d.get("schema_version") or 1)


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The keys of `d` that are fields of the dataclass `cls` (run/results.py's: older and newer files may carry
    others)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def _given(d: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """The keys of ``d`` that have a value: a key written as null reads as the field's default."""
    return {k: v for k, v in (d or {}).items() if v is not None}


# ======================================================================== run.json
# (section owned by the application-layer work: RunMeta and its parts)
@dataclass(frozen=True)
class Skipped(Record):
    """A planned conversation that cannot run, and why (run.json lists them)."""
    conversation_id: str
    condition: str
    reason: str


@dataclass
class DatasetRef(Record):
    """Which dataset a run used: a folder, a Hub id or the built-in sample, and what pins it."""
    source: Optional[str] = None
    revision: Optional[str] = None
    manifest_sha256: Optional[str] = None
    content_sha256: Optional[dict[str, str]] = None     # config -> hash of the rows the run uses
    kind: Optional[str] = None         # what the source resolved to: "folder", "hub" or "sample"
    commit: Optional[str] = None       # the Hub commit fetched (kind "hub")

    def changed_configs(self, now: Optional[dict[str, str]]) -> list[str]:
        """The configs whose rows differ from those recorded (none when either side has no record:
        runs started before the fingerprint existed resume as before). A part the run did not record (the mc
        rows, fingerprinted since condition mc exists) is not compared: a run started before cannot have used it."""
        if not self.content_sha256 or not now:
            return []
        return [c for c in sorted(self.content_sha256) if self.content_sha256.get(c) != now.get(c)]

    @classmethod
    def from_json(cls, d: Optional[Mapping[str, Any]]) -> "DatasetRef":
        return fields_of(cls, d or {})


#: a request option is written only when set (0 is set): run.json as it always was otherwise
_OMIT_UNSET = omit_if(lambda v: not v and v != 0)


@dataclass
class RoleRecord(Record):
    """One role's endpoint as run.json records it: the key's variable NAME, never its value. A key written as null
    reads as its default."""
    base_url: str = ""
    model: str = ""
    api_key_env: str = defaults.API_KEY_ENV
    concurrency: int = defaults.CONCURRENCY
    timeout: float = defaults.TIMEOUT
    max_retries: int = defaults.MAX_RETRIES
    http_client: str = defaults.HTTP_CLIENT     # the transport the role's client ran on ("aiohttp" | "httpx")
    local: bool = False
    #: every base URL of an endpoint pool (carryon_eval.model.pool); () = one endpoint (not written)
    pool: tuple[str, ...] = field(default=(), metadata=OMIT_EMPTY)
    # The role's request options (None: not set; written only when set, see EndpointConfig)
    temperature: Any = field(default=None, metadata=_OMIT_UNSET)   # the judge's when not 0 ("default": the provider's)
    reasoning_effort: Optional[str] = field(default=None, metadata=_OMIT_UNSET)
    system_prompt: Optional[str] = field(default=None, metadata=_OMIT_UNSET)
    extra_body: Optional[dict[str, Any]] = field(default=None, metadata=_OMIT_UNSET)
    #: What the endpoint refused and what was sent instead (carryon_eval.model.refusals), e.g.
    #: {"max_tokens": "sent as max_completion_tokens", "temperature": "not sent: provider default (refused 0.0)"}
    sent: dict[str, str] = field(default_factory=dict, metadata=_OMIT_UNSET)

    @classmethod
    def of(cls, config: EndpointConfig, *, local: bool, pool: Sequence[str] = ()) -> "RoleRecord":
        return cls(**config.public(), local=local, pool=tuple(public_url(url) for url in pool))

    def request_options(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in REQUEST_OPTION_NAMES if getattr(self, name) is not None}

    def config(self, *, base_url: Optional[str] = None, model: Optional[str] = None,
               api_key_env: Optional[str] = None, concurrency: Optional[int] = None,
               http_client: Optional[str] = None, **request: Any) -> EndpointConfig:
        """The EndpointConfig to call this role with, with optional overrides (``request``: request options
        given again; None keeps the recorded one)."""
        options = {**self.request_options(), **{k: v for k, v in request.items() if v is not None}}
        return EndpointConfig(base_url=base_url or self.base_url, model=model or self.model,
                              api_key_env=api_key_env if api_key_env is not None else self.api_key_env,
                              concurrency=concurrency or self.concurrency or defaults.CONCURRENCY,
                              timeout=self.timeout or defaults.TIMEOUT,
                              max_retries=self.max_retries or defaults.MAX_RETRIES,
                              http_client=http_client or self.http_client or defaults.HTTP_CLIENT, **options)

    def provider_default_temperature(self, asked: Any) -> Optional[str]:
        """Why this role's temperature is the provider's default rather than ``asked``, or None."""
        if "temperature" in self.sent:
            return f"not {describe_temperature(asked)}: the endpoint refuses any other"
        if (self.temperature if self.temperature is not None else asked) == "default":
            return "as asked"
        return None

    @classmethod
    def from_json(cls, d: Optional[Mapping[str, Any]]) -> "RoleRecord":
        return fields_of(cls, _given(d))


@dataclass(frozen=True)
class Generation(Record):
    """Generation parameters of one generating role (target or user simulator)."""
    temperature: Any = defaults.TARGET_TEMPERATURE    # a number, or "default": not sent (the provider's)
    max_tokens: int = defaults.TARGET_MAX_TOKENS
    seed: int = defaults.SEED

    def public(self) -> dict[str, Any]:
        return self.to_json()

    @classmethod
    def from_json(cls, d: Optional[Mapping[str, Any]], **fallback: Any) -> "Generation":
        """``fallback``: the values of the keys ``d`` lacks (the user simulator's defaults differ from the target's)."""
        return fields_of(cls, {**fallback, **(d or {})})


def _user_generation() -> Generation:
    return Generation(temperature=defaults.USER_TEMPERATURE, max_tokens=defaults.USER_MAX_TOKENS)


@dataclass
class RunGeneration:
    target: Generation = field(default_factory=Generation)
    user: Generation = field(default_factory=_user_generation)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target.to_json(), "user": self.user.to_json()}

    @classmethod
    def from_json(cls, d: Optional[dict[str, Any]]) -> "RunGeneration":
        d = d or {}
        user = _user_generation()
        return cls(target=Generation.from_json(d.get("target")),
                   user=Generation.from_json(d.get("user"), temperature=user.temperature, max_tokens=user.max_tokens))


JUDGE_FORMATS = ("json_schema", "text")  # ask for a JSON schema (falling back to text where refused), or text only


class SettingsError(ValueError):
    """A judge setting that is none of its choices; one line naming the setting."""


def _as_given(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class ScoringSetting:
    """A judge setting a wing's scorers read, declared by the wing (``register_setting``): its name (the key in
    run.json's judge block, which stays flat), its default and its reader (the one check of a value a user
    wrote: returns the value as kept, or raises SettingsError). ``leads``: written before the settings every
    judge has (the key order run.json has had since its first version)."""
    name: str
    default: Any
    read: Callable[[Any], Any] = _as_given
    leads: bool = False


SCORING_SETTINGS: dict[str, ScoringSetting] = {}
#: judge.json: the fields the wings' scorers add to the record of a pass, by name -> written before the common ones
PASS_FIELDS: dict[str, bool] = {}


def setting_reader(name: str) -> Callable[[Any], Any]:
    """The reader of a registered setting, looked up when a value is read (an option table made before the
    wings register theirs)."""
    return lambda value: SCORING_SETTINGS[name].read(value)


def register_setting(setting: ScoringSetting) -> ScoringSetting:
    SCORING_SETTINGS[setting.name] = setting
    return setting


#: what a judge pass with some settings says before it starts (each wing's word on its settings)
SETTING_NOTES: list[Callable[["JudgeSettings"], list[str]]] = []


def register_pass_field(name: str, *, leads: bool = False) -> None:
    """A field of judge.json's record of a pass; one that is also a registered setting records its value."""
    PASS_FIELDS[name] = leads


def register_note(note: Callable[["JudgeSettings"], list[str]]) -> None:
    SETTING_NOTES.append(note)


@dataclass
class JudgeSettings:
    """How the run asks its judge (a later `carryon-eval judge` may override them): what every judge has (its token
    cap, its answer form), and ``scoring``, the wings' own settings by name (``register_setting``; one not given
    is its default). A record holds valid values: each is read by its setting's reader."""
    max_tokens: int = defaults.JUDGE_MAX_TOKENS
    judge_format: str = "json_schema"   # "json_schema" (constrained where the endpoint can) | "text"
    scoring: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            self.judge_format = self.read_judge_format(self.judge_format)
        except SettingsError as exc:
            raise SettingsError(f"judge_format: {exc}") from None
        for name, value in list(self.scoring.items()):
            setting = SCORING_SETTINGS.get(name)
            if setting is None:
                continue
            try:
                self.scoring[name] = setting.read(value)
            except SettingsError as exc:
                raise SettingsError(f"{name}: {exc}") from None

    def __eq__(self, other: object) -> bool:
        """Two records are the same settings when they say the same (a setting left out is its default)."""
        return isinstance(other, JudgeSettings) and self.to_json() == other.to_json()

    @classmethod
    def of(cls, values: Mapping[str, Any], **common: Any) -> "JudgeSettings":
        """The settings of option values by name: ``common`` (max_tokens, judge_format), and each registered
        setting found in ``values`` (None: not given, its default)."""
        return cls(**common, scoring={n: v for n, v in values.items() if n in SCORING_SETTINGS and v is not None})

    def get(self, name: str) -> Any:
        """A wing's setting: as given, else its registered default."""
        if name in self.scoring:
            return self.scoring[name]
        try:
            return SCORING_SETTINGS[name].default
        except KeyError:
            raise SettingsError(f"no judge setting {name!r} is registered") from None

    def given(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Each registered setting: ``values``' one where given (not None), else this record's."""
        return {n: values[n] if values.get(n) is not None else self.get(n) for n in SCORING_SETTINGS}

    def notes(self) -> list[str]:
        """What a judge pass with these settings says before it starts (``register_note``)."""
        return [line for note in SETTING_NOTES for line in note(self)]

    def pass_fields(self) -> dict[str, Any]:
        """The fields of judge.json's pass record that are settings (``register_pass_field``), with their values."""
        return {n: self.get(n) for n in PASS_FIELDS if n in SCORING_SETTINGS}

    def with_scoring(self, **changes: Any) -> "JudgeSettings":
        return dataclasses.replace(self, scoring={**self.scoring, **changes})

    @staticmethod
    def read_judge_format(value: Any) -> str:
        if value not in JUDGE_FORMATS:
            raise SettingsError(f"expected one of {', '.join(JUDGE_FORMATS)}, got {value!r}")
        return str(value)

    def to_json(self) -> dict[str, Any]:
        """run.json's judge block, flat: the leading wing settings, the common ones, the other wing settings."""
        out = {n: self.get(n) for n, s in SCORING_SETTINGS.items() if s.leads}
        out.update(max_tokens=self.max_tokens, judge_format=self.judge_format)
        out.update((n, self.get(n)) for n, s in SCORING_SETTINGS.items() if not s.leads)
        out.update((n, v) for n, v in self.scoring.items() if n not in out)
        return out

    @classmethod
    def from_json(cls, d: Optional[dict[str, Any]]) -> "JudgeSettings":
        d = dict(d or {})
        common = {k: d.pop(k) for k in ("max_tokens", "judge_format") if k in d}
        return cls(**common, scoring=d)


RUN_SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class BootstrapRef(Record):
    """The report's bootstrap as run.json records it (a key the file lacks: the report's default)."""
    n_resamples: Optional[int] = absent()
    seed: Optional[int] = absent()


@dataclass(frozen=True)
class SweepRef(Record):
    """The sweep plan a run was started from (run.json's ``sweep``): the plan's file name and hash, how many targets
    it has, and this run's target by name and place among them (0-based)."""
    plan: Optional[str] = None
    plan_sha256: Optional[str] = None
    targets: Optional[int] = None
    target: Optional[str] = None
    index: Optional[int] = None


#: run.json's own top-level keys (RunMeta.to_json); any other object in it is a suite's (RunMeta.extras)
_RUN_KEYS = frozenset(("schema_version", "carryonbench_version", "created", "dataset", "roles", "generation", "judge",
                       "conditions", "limit", "shared_turn1", "prompts", "notice", "skipped", "subset", "bootstrap",
                       "suites", "usage", "sweep", "no_user_turns"))


@dataclass
class RunMeta:
    """run.json: every setting of a run, written once when it starts; a rerun must agree with it."""
    carryonbench_version: Optional[str] = None
    created: Optional[str] = None
    dataset: DatasetRef = field(default_factory=DatasetRef)
    roles: dict[str, RoleRecord] = field(default_factory=dict)
    generation: RunGeneration = field(default_factory=RunGeneration)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    conditions: list[str] = field(default_factory=list)
    limit: Optional[int] = None
    shared_turn1: bool = True
    prompts: dict[str, str] = field(default_factory=dict)
    notice: Optional[str] = None
    skipped: list[Skipped] = field(default_factory=list)
    subset: Optional[str] = None              # a named subset (carryon_eval.dataset.subset); None: the full plan
    bootstrap: Optional[BootstrapRef] = None  # the report's bootstrap
    suites: dict[str, Any] = field(default_factory=dict)   # a suite's own record (e.g. opensafeintent's files)
    #: calls and tokens per role over every command run on the folder (usage.json summed per role; cached prompt
    #: tokens and reasoning tokens as the providers reported them; ``usd`` where a --price was given)
    usage: dict[str, Any] = field(default_factory=dict)
    sweep: Optional[SweepRef] = None          # the sweep plan the run was started from; None: a run of its own
    schema_version: int = RUN_SCHEMA_VERSION
    #: the suites' own top-level keys of run.json ({key: its record}; Configured.meta), each written only when
    #: non-empty, after the run's own keys; read back: every top-level object that is none of the run's own keys
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: True when no planned conversation has a simulated user turn (single-turn suites only): the user role
    #: renders nothing, so it cannot make the run self-simulated
    no_user_turns: bool = False

    def role(self, name: str) -> RoleRecord:
        return self.roles.get(name) or RoleRecord()

    def self_status(self, judge: Optional[str] = None) -> list[str]:
        """``self_status`` of this run's roles; ``judge``: the judge model whose judgments are reported (default:
        the run's judge)."""
        local = [name for name, r in self.roles.items() if r.local]
        return self_status(self.role("target").model, None if self.no_user_turns else self.role("user").model,
                           judge or self.role("judge").model, local)

    def compatibility(self) -> dict[str, Any]:
        """The settings that shape the transcripts, by name: a rerun into the same folder must agree on
        all of them (endpoint URLs, API key variables and concurrency may change between reruns)."""
        return {"dataset.source": self.dataset.source, "dataset.revision": self.dataset.revision,
                "dataset.manifest_sha256": self.dataset.manifest_sha256,
                "roles.target.model": self.role("target").model or None,
                "roles.user.model": self.role("user").model or None,
                **{f"roles.{name}.request": self.role(name).request_options() for name in ("target", "user")
                   if self.role(name).request_options()},
                "generation.target": self.generation.target.to_json(),
                "generation.user": self.generation.user.to_json(),
                "conditions": list(self.conditions), "limit": self.limit, "shared_turn1": self.shared_turn1,
                "prompts": dict(self.prompts), "subset": self.subset}

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version, "carryonbench_version": self.carryonbench_version,
                "created": self.created, "dataset": self.dataset.to_json(),
                "roles": {name: r.to_json() for name, r in self.roles.items()},
                "generation": self.generation.to_json(), "judge": self.judge.to_json(),
                "conditions": list(self.conditions), "limit": self.limit, "shared_turn1": self.shared_turn1,
                "prompts": dict(self.prompts), "notice": self.notice,
                "skipped": [s.to_json() for s in self.skipped], **({"subset": self.subset} if self.subset else {}),
                **({"bootstrap": self.bootstrap.to_json()} if self.bootstrap else {}),
                **({"suites": dict(self.suites)} if self.suites else {}),
                **({"usage": dict(self.usage)} if self.usage else {}),
                **({"sweep": self.sweep.to_json()} if self.sweep else {}),
                **{key: dict(value) for key, value in self.extras.items() if value},
                **({"no_user_turns": True} if self.no_user_turns else {})}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "RunMeta":
        """run.json read back; a key written as null reads as its default, and ``extras`` holds every top-level
        object that is none of the run's own keys."""
        meta = fields_of(cls, {k: v for k, v in _given(d).items() if k in _RUN_KEYS})
        notice, shared_turn1 = meta.notice, d.get("shared_turn1", True)
        return dataclasses.replace(
            meta, notice=" ".join(map(str, notice)) if isinstance(notice, list) else notice,
            roles={name: role if role is not None else RoleRecord() for name, role in meta.roles.items()},
            conditions=list(meta.conditions), prompts=dict(meta.prompts), shared_turn1=bool(shared_turn1),
            bootstrap=meta.bootstrap if isinstance(meta.bootstrap, BootstrapRef) else None,
            usage=meta.usage if isinstance(meta.usage, dict) else {},
            sweep=meta.sweep if isinstance(meta.sweep, SweepRef) else None, schema_version=int(meta.schema_version or 1),
            extras={k: dict(v) for k, v in d.items() if k not in _RUN_KEYS and isinstance(v, dict)},
            no_user_turns=meta.no_user_turns is True)


# ======================================================================== judge.json
# (section owned by the scorers work: JudgeSummary and its parts)
@dataclass
class ScorerTally(Record):
    """What one judge's pass did for one scorer (its block of judge.json, under the scorer's name)."""
    records_total: int = 0           # records the run needs (one per reply, or per reply and item)
    records_written: int = 0         # records this judge has now
    missing: int = 0                 # records_total - records_written (failed calls)
    kept_from_earlier: int = 0       # scored records of this judge and prompt kept from an earlier pass
    calls_planned: int = 0           # distinct judge questions asked this time (after dedupe)
    records_planned: int = 0         # records those answer
    judged: int = 0
    unscored_new: int = 0
    unscored: int = 0                # unscored records of this judge in the final file
    retried: int = 0
    failed: int = 0
    logprob_fallbacks: int = 0
    via: dict[str, int] = field(default_factory=dict)   # records of this judge by how obtained (json_schema/text/logprobs)
    errors: list[str] = field(default_factory=list)


_JUDGE_PASS_FIELDS = ("judge_format", "generation", "prompts", "context", "seconds")


@dataclass
class JudgePass:
    """One judge model's latest pass over a run: its settings and a tally per scorer. In JSON the
    tallies sit at the top level under the scorer's name; so do the fields the wings' scorers add (``scoring``,
    by name: ``register_pass_field``)."""
    judge_model: str
    judge: dict[str, Any]                        # the endpoint's public settings (never a key)
    generation: dict[str, Any]                   # temperature, max_tokens, retries
    prompts: dict[str, str]                      # scorer -> prompt ref
    context: dict[str, str]                      # scorer -> what the judge saw
    seconds: float
    tallies: dict[str, ScorerTally]
    complete: bool
    judge_format: Optional[str] = None           # None in passes recorded before it was
    scoring: dict[str, Any] = field(default_factory=dict)    # the wings' fields of the pass

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"judge_model": self.judge_model, "judge": self.judge}
        out.update((name, self.scoring.get(name)) for name, leads in PASS_FIELDS.items() if leads)
        out.update((name, getattr(self, name)) for name in _JUDGE_PASS_FIELDS)
        out.update((name, value) for name, value in self.scoring.items() if name not in out and value is not None)
        out.update((name, tally.to_json()) for name, tally in self.tallies.items())
        out.update(scorers=list(self.tallies), complete=self.complete)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "JudgePass":
        read = fields_of(cls, d)
        if read.judge_model is None:
            raise KeyError("judge_model")
        names = d.get("scorers") or [k for k, v in d.items() if isinstance(v, dict) and "records_total" in v]
        return dataclasses.replace(
            read, judge=read.judge or {}, generation=read.generation or {}, prompts=read.prompts or {},
            context=read.context or {}, seconds=read.seconds or 0.0, complete=bool(read.complete),
            tallies={n: ScorerTally.from_json(d[n]) for n in names if isinstance(d.get(n), dict)},
            scoring={n: d[n] for n in PASS_FIELDS if n in d})


@dataclass
class FileStamp(Record):
    """judge.json's record of one judgment file as the latest pass left it: the judge models with records in it
    (in order of first appearance), its size and when it was written (a file whose size or time differs since was
    written after: it is looked into)."""
    judges: list[str] = field(default_factory=list)
    bytes: int = 0
    mtime_ns: Optional[int] = None

    def readable(self) -> bool:
        return isinstance(self.judges, list) and isinstance(self.bytes, int)


@dataclass
class JudgeSummary:
    """judge.json: every judge model that judged the run, and which pass was the latest. The latest
    pass's fields are also at the top level, as before judges could sit side by side."""
    judges: dict[str, JudgePass]
    latest: str                                  # judge_model of the latest pass
    schema_version: int = SCHEMA_VERSION
    #: the judgment files as the latest pass left them, by file name: what is there, read without reading the files
    files: dict[str, FileStamp] = field(default_factory=dict)

    @property
    def last(self) -> JudgePass:
        return self.judges[self.latest]

    def with_pass(self, judged: JudgePass, files: Optional[dict[str, FileStamp]] = None) -> "JudgeSummary":
        return JudgeSummary({**self.judges, judged.judge_model: judged}, judged.judge_model,
                            files={**self.files, **(files or {})})

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version, **self.last.to_json(),
                "judges": {name: p.to_json() for name, p in self.judges.items()},
                **({"files": encode(self.files)} if self.files else {})}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "JudgeSummary":
        latest = JudgePass.from_json(d)
        read = fields_of(_JudgeSummaryFile, _given(d))
        judges = {name: JudgePass.from_json(p) for name, p in read.judges.items()}
        judges.setdefault(latest.judge_model, latest)   # a version-1 file records one judge only
        files = {str(k): v for k, v in read.files.items() if isinstance(v, FileStamp) and v.readable()}
        return cls(judges, latest.judge_model, int(read.schema_version or 1), files)


@dataclass
class _JudgeSummaryFile(Record):
    """judge.json's own keys beside the latest pass's (JudgeSummary.from_json reads them)."""
    judges: dict[str, Any] = field(default_factory=dict)
    files: dict[str, FileStamp] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION


def self_status(target: Optional[str], user: Optional[str], judge: Optional[str],
                local: Sequence[str] = ()) -> list[str]:
    """"self-simulated" / "self-judged" when the user simulator / the judge is the target model itself, on an
    endpoint (a role on the embedded model is the smoke test's, said by "smoke" instead)."""
    if not target or "target" in local:
        return []
    return [word for word, role, model in (("self-simulated", "user", user), ("self-judged", "judge", judge))
            if model == target and role not in local]
