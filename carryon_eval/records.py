"""Every record written to a run folder or read back from it, typed: run.json, judge.json, results.json.

Readers never walk these files as dicts by string paths: they load the record (`RunMeta.read(path)`,
...) and use its fields. Each record has `to_json()` / `from_json()` and a `schema_version`; the
per-line records of the JSONL files (transcripts, judgments) live in carryon_eval.schema.
"""
from __future__ import annotations

from dataclasses import dataclass, field  # noqa: F401
from typing import Any, Optional  # noqa: F401

SCHEMA_VERSION = 1


# ======================================================================== run.json
# (section owned by the application-layer work: RunMeta and its parts)




# ======================================================================== judge.json
# (section owned by the scorers work: JudgeSummary and its parts)
@dataclass
class ScorerTally:
    """What one judge's pass did for one scorer (the "utility" / "safety" blocks of judge.json)."""
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
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "ScorerTally":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


_JUDGE_PASS_FIELDS = ("judge_model", "judge", "utility_mode", "generation", "prompts", "context", "seconds")


@dataclass
class JudgePass:
    """One judge model's latest pass over a run: its settings and a tally per scorer. In JSON the
    tallies sit at the top level under the scorer's name ("utility", "safety", ...)."""
    judge_model: str
    judge: dict[str, Any]                        # the endpoint's public settings (never a key)
    utility_mode: Optional[str]
    generation: dict[str, Any]                   # temperature, max_tokens, retries
    prompts: dict[str, str]                      # scorer -> prompt ref
    context: dict[str, str]                      # scorer -> what the judge saw
    seconds: float
    tallies: dict[str, ScorerTally]
    complete: bool

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name) for name in _JUDGE_PASS_FIELDS}
        out.update((name, tally.to_json()) for name, tally in self.tallies.items())
        out["scorers"] = list(self.tallies)
        out["complete"] = self.complete
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "JudgePass":
        names = d.get("scorers") or [k for k in ("utility", "safety") if isinstance(d.get(k), dict)]
        return cls(judge_model=d["judge_model"], judge=d.get("judge") or {}, utility_mode=d.get("utility_mode"),
                   generation=d.get("generation") or {}, prompts=d.get("prompts") or {},
                   context=d.get("context") or {}, seconds=d.get("seconds") or 0.0,
                   tallies={n: ScorerTally.from_json(d[n]) for n in names if isinstance(d.get(n), dict)},
                   complete=bool(d.get("complete")))


@dataclass
class JudgeSummary:
    """judge.json: every judge model that judged the run, and which pass was the latest. The latest
    pass's fields are also at the top level, as before judges could sit side by side."""
    judges: dict[str, JudgePass]
    latest: str                                  # judge_model of the latest pass
    schema_version: int = SCHEMA_VERSION

    @property
    def last(self) -> JudgePass:
        return self.judges[self.latest]

    def with_pass(self, judged: JudgePass) -> "JudgeSummary":
        return JudgeSummary({**self.judges, judged.judge_model: judged}, judged.judge_model)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version, **self.last.to_json(),
                "judges": {name: p.to_json() for name, p in self.judges.items()}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "JudgeSummary":
        latest = JudgePass.from_json(d)
        judges = {name: JudgePass.from_json(p) for name, p in (d.get("judges") or {}).items()}
        judges.setdefault(latest.judge_model, latest)   # a version-1 file records one judge only
        return cls(judges, latest.judge_model, int(d.get("schema_version") or 1))


# ======================================================================== results.json
# (section owned by the application-layer work: Results and its parts)
