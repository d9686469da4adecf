"""results.json's records, typed, and its one serializer: the envelope (model, dataset, run, judges, generated,
plots, notes), the status words every artifact of a run says first, and the suites' sections: each under its own
key, except the one section held at results.json's top level (TOP_LEVEL_SECTION: its keys are TOP_LEVEL_KEYS,
fields of their own, as results.json has always had them). This is the one module that knows that layout.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from carryon_eval.run.records import SCHEMA_VERSION, _known, _version

@dataclass
class ResultsDataset:
    source: Optional[str] = None
    revision: Optional[str] = None
    manifest_version: Optional[str] = None


@dataclass
class ResultsRun:
    folder: str = ""
    notice: Optional[str] = None
    failed_conversations: int = 0
    empty_replies: int = 0
    subset: Optional[str] = None      # the named subset the run played (carryon_eval.dataset.subset); None: full
    status: list[str] = field(default_factory=list)   # STATUS_LINES' keys that hold for the run ([]: a full run)


#: What every artifact made from a run says first when its status is not a full measurement.
STATUS_LINES = {
    "smoke": "SMOKE TEST: a role ran on the embedded Gemma 3 270M model; these numbers measure nothing.",
    "incomplete": "INCOMPLETE: planned conversations or judgments are missing; these numbers stand on part of the "
                  "run (rerun the same command to finish it).",
    "self-simulated": "SELF-SIMULATED: the target model also played the user simulator (--user-model is the target's, "
                      "its default when not given); these numbers are not comparable with runs under another "
                      "simulator.",
    "reported": "REPORTED: numbers as a paper reports them, not measured here (its own dataset build, simulator and "
                "judges); no interval, never ranked or compared with a measured run.",
    "self-judged": "SELF-JUDGED: the target model also judged its own replies (--judge-model is the target's, its "
                   "default when not given); these numbers are not comparable with runs under another judge.",
}


def register_status_line(word: str, line: str) -> None:
    """A suite's own status word (SuiteReport.status) and what every artifact of a run it holds for says first."""
    STATUS_LINES.setdefault(word, line)


@dataclass
class JudgesInfo:
    """Who judged the numbers: per judge kind its models, prompt refs and context; complete = every
    judgment present (None when the judge phase wrote no summary)."""
    utility: dict[str, Any] = field(default_factory=dict)
    safety: dict[str, Any] = field(default_factory=dict)
    complete: Optional[bool] = None
    selected: Optional[str] = None               # the judge model whose judgments the numbers use
    present: list[str] = field(default_factory=list)   # every judge model that judged the run


@dataclass
class Generated:
    by: str = ""
    at: str = ""


@dataclass
class PlotsInfo:
    files: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)   # plot name -> why it was not drawn
    note: Optional[str] = None


RESULTS_SCHEMA_VERSION = SCHEMA_VERSION
_SECTIONS = {"dataset": ResultsDataset, "run": ResultsRun, "judges": JudgesInfo, "generated": Generated,
             "plots": PlotsInfo}
#: results.json's layout, known here only: one suite's section sits at its top level instead of under its key (the
#: CarryOnBench conditions', as every results.json has had them), its keys interleaved with the frame's in the order
#: of Results' fields; its further keys (e.g. its intent contrasts) are sections of their own, and its ``judges``
#: fill the frame's JudgesInfo. Every other suite's section is a top-level key of its own, after the frame's.
TOP_LEVEL_SECTION = "carryonbench"
TOP_LEVEL_KEYS = ("n", "conditions", "recovery", "clarification_effect", "unscored", "by_turn", "move_effects",
                  "turn1_bins", "by_domain", "bootstrap", "estimators", "null_meaning", "judge_context",
                  "utility_measure")
#: JudgesInfo's judge kinds that are the top-level section's (its ``judges`` fill them): written only with it
TOP_LEVEL_JUDGES = ("utility", "safety")


@dataclass
class Results:
    """results.json: the frame (model, judges, dataset, run, notes, generated, plots) and the suites' sections.
    The top-level section's keys (TOP_LEVEL_KEYS) are fields of their own, read as such by its suite; they stay
    dict-valued: their shape is the suite's summary's."""
    model: str = "unknown"
    n: dict[str, Any] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)
    recovery: dict[str, Any] = field(default_factory=dict)
    #: BC minus NC utility on the same queries and lengths (the suite's summary; {} in results.json written before it)
    clarification_effect: dict[str, Any] = field(default_factory=dict)
    unscored: dict[str, Any] = field(default_factory=dict)
    by_turn: dict[str, Any] = field(default_factory=dict)
    move_effects: dict[str, Any] = field(default_factory=dict)
    turn1_bins: dict[str, Any] = field(default_factory=dict)
    by_domain: dict[str, Any] = field(default_factory=dict)
    bootstrap: dict[str, Any] = field(default_factory=dict)
    estimators: dict[str, Any] = field(default_factory=dict)
    null_meaning: str = ""
    judges: JudgesInfo = field(default_factory=JudgesInfo)
    judge_context: dict[str, str] = field(default_factory=dict)
    dataset: ResultsDataset = field(default_factory=ResultsDataset)
    run: ResultsRun = field(default_factory=ResultsRun)
    notes: list[str] = field(default_factory=list)
    generated: Generated = field(default_factory=Generated)
    plots: Optional[PlotsInfo] = None
    #: what the utilities measure: "benutil" (Ben-Util's checklists) or "rubric" (OpenSafeIntent's 1-4 helpfulness
    #: rubric as (score - 1) / 3); two runs of different measures are never compared in one column
    utility_measure: str = "benutil"
    #: the sections of the other suites (suite.report.section -> its JSON), e.g. "triplet"; at the top level
    sections: dict[str, Any] = field(default_factory=dict)
    schema_version: int = RESULTS_SCHEMA_VERSION
    #: the key of the section held at the top level (TOP_LEVEL_SECTION), None when the run has none (the report's
    #: frame starts from None; results.json read back has it when its top level has the section's keys)
    top_level: Optional[str] = TOP_LEVEL_SECTION

    def put_section(self, key: str, section: dict[str, Any], top_level: bool = False) -> None:
        """Add a suite's section: under its key, or (``top_level``) as the top-level section's keys."""
        if not top_level:
            self.sections[key] = section
            return
        self.top_level = key
        for name, value in section.items():
            if name in TOP_LEVEL_KEYS:
                setattr(self, name, value)
            elif name == "judges":
                for attr, v in value.items():
                    setattr(self.judges, attr, v)
            else:
                self.sections[name] = value

    def section(self, key: str) -> Any:
        """A suite's section: the results themselves for the top-level one (its keys are their fields), else
        its JSON under its key (None when the run has none)."""
        return self if key == self.top_level else self.sections.get(key)

    def status(self) -> list[str]:
        """"smoke" and/or "incomplete" (results.json written before run.status existed: from the notice and
        the judges' completeness)."""
        if self.run.status:
            return list(self.run.status)
        return (["smoke"] if self.run.notice else []) + (["incomplete"] if self.judges.complete is False else [])

    def status_lines(self) -> list[str]:
        return [STATUS_LINES.get(s, s.upper()) for s in self.status()]

    def to_json(self) -> dict[str, Any]:
        """The JSON object, keys in the order results.json has always had (schema_version first), the top-level
        section's keys (and its kinds of ``judges``) only when the run has it, each other suite section last under
        its own key."""
        out: dict[str, Any] = {"schema_version": self.schema_version}
        for f in dataclasses.fields(self):
            if f.name in ("schema_version", "sections", "top_level") or (f.name == "plots" and self.plots is None) \
                    or (f.name in TOP_LEVEL_KEYS and self.top_level is None):
                continue
            value = getattr(self, f.name)
            out[f.name] = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
        if self.top_level is None:      # the judges' utility and safety kinds are the top-level section's
            out["judges"] = {k: v for k, v in out["judges"].items() if k not in TOP_LEVEL_JUDGES}
        out.update((name, section) for name, section in self.sections.items() if section is not None)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Results":
        fields = {f.name for f in dataclasses.fields(cls)}
        values = _known(cls, d)
        values.pop("top_level", None)
        values["sections"] = {k: v for k, v in d.items() if k not in fields and isinstance(v, dict)}
        for name, section in _SECTIONS.items():
            if isinstance(values.get(name), dict):
                values[name] = section(**_known(section, values[name]))
        values["top_level"] = TOP_LEVEL_SECTION if "conditions" in d else None
        values["schema_version"] = _version(d)
        return cls(**values)
