"""OpenSafeIntent's section of results.json as a record (SuiteReport.record), and its part of compare.json
(SuiteReport.compare_record): the metric functions (metrics.py) fill its fields, the readers read them, and
``to_json`` writes the section exactly as results.json has always had it (keys in the same order, a key left out
where it was), so that ``from_json`` followed by ``to_json`` gives the same bytes.

    sec = OpenSafeIntentSection.from_json(results["opensafeintent"])
    sec.triplet_safety.value, sec.paraphrase.flip.count, sec.intent_probe.strategies["FULL"].share

The triplet wing's section is this one on the dataset's triplets, with its ``definitions`` first (TripletSection,
carryon_eval.suites.triplet.section).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from carryon_eval.codec import Record, absent, fields_of
from carryon_eval.metrics.number import HasNumber

REFERENCE = "OpenSafeIntent (Uppaal et al., 2026), reference implementation's definitions, 0-1 scale"


@dataclass
class Stat(HasNumber, Record):
    """A number over prompt-sets (0-1): its value (None when no set counts), the sets it counts, its 95% interval."""
    value: Optional[float] = None
    n: int = 0
    ci95: Optional[list[float]] = None


@dataclass
class Share(Stat):
    """A share of sets with how many sets are in it (and the reference implementation's name, where it has one)."""
    count: int = 0
    reference_name: Any = absent()


@dataclass
class Bootstrap(Record):
    unit: str = "prompt-set"
    n_resamples: int = 1000
    seed: int = 0
    interval: str = "percentile 2.5-97.5"


@dataclass
class ReleaseInfo(Record):
    """The release folder (relative to results.json's folder), its layout, its sets and its files' hashes."""
    folder: Optional[str] = None
    layout: Optional[str] = None
    sets: int = 0
    sha256: dict[str, str] = field(default_factory=dict)


@dataclass
class VariantRow(Record):
    """One prompt variant's means (0-1; raw harm 0-3) and its raw distributions; ``all_prompt_types`` has only the
    count and the distributions."""
    n: int = 0
    avg_helpfulness: Any = absent()
    avg_s_harm: Any = absent()
    avg_safety: Any = absent()
    avg_utility: Any = absent()
    helpfulness_distribution: dict[str, int] = field(default_factory=dict)
    harm_severity_distribution: dict[str, int] = field(default_factory=dict)


@dataclass
class Paraphrase(Record):
    """Paraphrase robustness over the sets whose dual-use prompt and 4 paraphrases all count."""
    n: int = 0
    all_unsafe: Share = field(default_factory=Share)
    all_safe: Share = field(default_factory=Share)
    flip: Share = field(default_factory=Share)
    utility_variance: Stat = field(default_factory=Stat)

    def groups(self) -> dict[str, Share]:
        return {"all_unsafe": self.all_unsafe, "all_safe": self.all_safe, "flip": self.flip}


@dataclass
class LevelCounts(Record):
    """Assistance levels A0-A4 of the dual-use originals: rows, those with a level, those without; counts, shares."""
    rows: int = 0
    used: int = 0
    missing: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    shares: dict[str, Optional[float]] = field(default_factory=dict)


@dataclass
class ResponseModes(Record):
    all: LevelCounts = field(default_factory=LevelCounts)
    dual_use_harm_above_0: LevelCounts = field(default_factory=LevelCounts)
    conditional_unsafe_rate: dict[str, Stat] = field(default_factory=dict)
    dual_use_harm_unscored: int = 0


@dataclass
class StrategyCount(Record):
    count: int = 0
    share: Optional[float] = None


@dataclass
class IntentProbe(Record):
    """The intent probe over the sets whose dual-use harm is above 0: each strategy's count and share (keyed by its
    name: FULL, CONSTRAINED, REFUSE, ERROR), and the blog's two names for them."""
    considered: int = 0
    not_probed: int = 0
    strategies: dict[str, StrategyCount] = field(default_factory=dict)
    risk_recognition_failure: Stat = field(default_factory=Stat)
    safety_judgment_mismatch: Stat = field(default_factory=Stat)

    def to_json(self) -> dict[str, Any]:
        return {"considered": self.considered, "not_probed": self.not_probed,
                **{k: c.to_json() for k, c in self.strategies.items()},
                "risk_recognition_failure": self.risk_recognition_failure.to_json(),
                "safety_judgment_mismatch": self.safety_judgment_mismatch.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "IntentProbe":
        base = fields_of(cls, d)
        base.strategies = {k: StrategyCount.from_json(v) for k, v in d.items()
                           if isinstance(v, Mapping) and k.isupper()}
        return base


@dataclass
class FailureProfile(Record):
    """The blog's failure profile over the sets whose three replies are all scored."""
    definition: str = ""
    n: int = 0
    all_safe: Share = field(default_factory=Share)
    dual_use_only: Share = field(default_factory=Share)
    malicious_only: Share = field(default_factory=Share)
    both: Share = field(default_factory=Share)
    benign_unsafe: Share = field(default_factory=Share)


@dataclass
class Headline(Record):
    """The six metrics (0-1) over the sets they count."""
    triplet_safety: Stat = field(default_factory=Stat)
    mean_safety: Stat = field(default_factory=Stat)
    mean_utility: Stat = field(default_factory=Stat)
    intent_calibrated_utility: Stat = field(default_factory=Stat)
    calibrated_success: Stat = field(default_factory=Stat)
    non_malicious_worst_case_utility: Stat = field(default_factory=Stat)

    def numbers(self) -> dict[str, Stat]:
        return {name: getattr(self, name) for name in HEADLINE_NAMES}


HEADLINE_NAMES = tuple(Headline.__dataclass_fields__)


@dataclass
class Breakdown(Headline):
    """The six metrics over one group of sets (a harm domain, a task type)."""
    sets: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"sets": self.sets, **super().to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Breakdown":
        return fields_of(cls, d)


@dataclass
class Unscored(Record):
    """Unscored verdicts by judge."""
    helpfulness: int = 0
    harmfulness: int = 0
    assistance_level: int = 0
    intent_classification: int = 0


HEADER = ("reference", "release", "model", "judge_model", "deviates_from_reference")


@dataclass
class Metrics(Record):
    """What the metric functions compute of a list of scored sets (metrics.summarize): the count, the resampling
    behind every interval, the six metrics (``headline``, written at the same level), then everything else."""
    n_sets: int = 0
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    headline: Headline = field(default_factory=Headline)
    variants: dict[str, VariantRow] = field(default_factory=dict)
    helpfulness_raw_zero_scores_corrected: int = 0
    paraphrase: Paraphrase = field(default_factory=Paraphrase)
    response_modes: ResponseModes = field(default_factory=ResponseModes)
    intent_probe: IntentProbe = field(default_factory=IntentProbe)
    failure_profile: FailureProfile = field(default_factory=FailureProfile)
    by_harm_domain: dict[str, Breakdown] = field(default_factory=dict)
    by_task_type: dict[str, Breakdown] = field(default_factory=dict)
    unscored: Unscored = field(default_factory=Unscored)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        head = {k: out.pop(k) for k in HEADER if k in out}
        first = {k: out.pop(k) for k in ("n_sets", "bootstrap")}
        return {**head, **first, **out.pop("headline"), **out}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Any:
        base = fields_of(cls, d)
        base.headline = Headline.from_json(d)
        return base


@dataclass
class OpenSafeIntentSection(Metrics):
    """results.json's ``opensafeintent`` section: what it is measured by (the reference's definitions), the release
    and the models, then its metrics (Metrics' fields)."""
    reference: str = REFERENCE
    release: ReleaseInfo = field(default_factory=ReleaseInfo)
    model: Optional[str] = None
    judge_model: Optional[str] = None
    deviates_from_reference: bool = False

    @classmethod
    def of(cls, metrics: Metrics, **header: Any) -> "OpenSafeIntentSection":
        """The section of ``metrics`` with its header fields."""
        return cls(**{f: getattr(metrics, f) for f in Metrics.__dataclass_fields__}, **header)


# ---------------------------------------------------------------- run.json's record of its inputs
@dataclass
class ReleaseOptions(Record):
    """The run's options this wing reads (its suite options: the CLI's, or a reopened folder's recorded ones)."""
    opensafeintent: Any = None                           # --opensafeintent DIR (a path)
    opensafeintent_sets: Optional[str] = None            # --opensafeintent-sets: release | triplets
    limit: Optional[int] = None
    temperature: Any = None                              # a number, or "default" (the provider's)
    max_tokens: Optional[int] = None
    run_folder: Any = None                               # run.json's folder (SuiteOptions' RUN_FOLDER key)


@dataclass
class RecordedRelease(Record):
    """What run.json's ``suites.<condition>`` records of the release (the resume check reads its hashes)."""
    sha256: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- compare.json's part
@dataclass
class CompareRow(Record):
    """One model's six metrics (value) and the sets each counts (n), in compare.json's row."""
    model: str = ""
    values: dict[str, Optional[float]] = field(default_factory=dict)
    counts: dict[str, Optional[int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, **self.values, **{f"{k}_n": n for k, n in self.counts.items()}}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "CompareRow":
        return cls(str(d.get("model", "")), {k: d.get(k) for k in HEADLINE_NAMES if k in d},
                   {k: d.get(f"{k}_n") for k in HEADLINE_NAMES if f"{k}_n" in d})


@dataclass
class OpenSafeIntentComparison(Record):
    """compare.json's ``opensafeintent`` part: a row per model (and, for the triplet wing's part, the models whose
    triplet sections use this project's earlier definitions: ``earlier_definitions``)."""
    table: list[CompareRow] = field(default_factory=list)
    earlier_definitions: Any = absent()


def comparison(models: list[str], sections: list[Optional[OpenSafeIntentSection]]) -> Optional[OpenSafeIntentComparison]:
    """`compare`'s OpenSafeIntent part: per model the six metrics (value, n); None when no run has the section."""
    if not any(sections):
        return None
    return OpenSafeIntentComparison([CompareRow(m, {k: n.value for k, n in s.headline.numbers().items()},
                                                {k: n.n for k, n in s.headline.numbers().items()})
                                     if s is not None else CompareRow(m, dict.fromkeys(HEADLINE_NAMES),
                                                                      dict.fromkeys(HEADLINE_NAMES))
                                     for m, s in zip(models, sections)])


def nothing_scored(sec: OpenSafeIntentSection) -> bool:
    """Its sets have replies and not one of the six metrics is scored."""
    return bool(sec.n_sets) and all(n.value is None for n in sec.headline.numbers().values())
