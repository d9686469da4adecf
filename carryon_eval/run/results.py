"""results.json's records, typed, and its one serializer: the envelope (model, dataset, run, judges, generated,
plots, notes), the status words every artifact of a run says first, and the suites' sections: each under its own
key, except the one section held at results.json's top level (TOP_LEVEL_SECTION: its keys are TOP_LEVEL_KEYS,
fields of their own, as results.json has always had them). This is the one module that knows that layout.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Protocol

from carryon_eval.codec import encode
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
    """Who judged the run, frame-wide: complete = every judgment present (None when the judge phase wrote no
    summary), the judge model whose judgments the numbers use and every judge model that judged it. What each kind
    of judge is (models, prompts, context) is the judges record of the section that has it (the top-level section's
    is written into results.json's ``judges`` before these keys); ``utility`` and ``safety`` remain as read-only
    views of it for the Python API (deprecated: read the section's ``judges`` record)."""
    complete: Optional[bool] = None
    selected: Optional[str] = None               # the judge model whose judgments the numbers use
    present: list[str] = field(default_factory=list)   # every judge model that judged the run
    #: the top-level section's judges record (set when it is placed), which the old views read; never a field
    _kinds = None

    utility = property(lambda self: self._view("utility"), doc="Deprecated, read-only: the top-level section's "
                       "``judges.utility`` as results.json's JSON (a copy; {} when the results have none).")
    safety = property(lambda self: self._view("safety"), doc="Deprecated, read-only: the top-level section's "
                      "``judges.safety`` as results.json's JSON (a copy; {} when the results have none).")

    def _view(self, kind: str) -> dict[str, Any]:
        return dict(kinds_json(self._kinds).get(kind) or {})


def kinds_json(judges: Any) -> dict[str, Any]:
    """A section's judges record (or its JSON) as results.json's JSON ({} for none)."""
    return {} if judges is None else dict(_encode(judges))


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
#: CarryOnBench conditions', as every results.json has had them), its keys interleaved with the frame's (those before
#: ``judges``, then those after ``generated``/``plots``); its further keys (e.g. its intent contrasts) follow the frame
#: as keys of their own, and its ``judges`` (its record's JSON: its kinds of judges) open the frame's ``judges``. Every other suite's section is a top-level key
#: of its own, after those.
TOP_LEVEL_SECTION = "carryonbench"
TOP_LEVEL_KEYS = ("n", "conditions", "recovery", "clarification_effect", "unscored", "by_turn", "move_effects",
                  "turn1_bins", "by_domain", "bootstrap", "estimators", "null_meaning", "judge_context",
                  "utility_measure")
#: where the top-level section's keys sit among the frame's: before ``judges``, before ``dataset``, at the end
_LIFTED_AT = {"judges": TOP_LEVEL_KEYS[:12], "dataset": ("judge_context",), None: ("utility_measure",)}
#: the frame's fields in results.json's order (the top-level section's keys placed by _LIFTED_AT)
_FRAME = ("model", "judges", "dataset", "run", "notes", "generated", "plots")
#: the old fields of the top-level section (read-only views) when the results have none of it
_VIEW_DEFAULTS: dict[str, Callable[[], Any]] = {**{k: dict for k in TOP_LEVEL_KEYS}, "null_meaning": str,
                                                "utility_measure": lambda: "benutil"}


class SectionRecord(Protocol):
    """A suite's section of results.json as a record (SuiteReport.record): written by ``to_json``, read back by
    its type's ``from_json``."""
    def to_json(self) -> dict[str, Any]: ...

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "SectionRecord": ...


#: section key -> its record type (a class with ``from_json``; None: the section stays its JSON), of every registered
#: suite: set by the suite registry (carryon_eval.suite.registry), which sits above this module
_section_types: Callable[[], Mapping[str, Any]] = dict


def use_section_types(types: Callable[[], Mapping[str, Any]]) -> None:
    """Where Results.from_json finds the suites' section record types (the suite registry calls this on import)."""
    global _section_types
    _section_types = types


def _old_field(name: str) -> property:
    def get(self: "Results") -> Any:
        lifted = self.sections.get(TOP_LEVEL_SECTION)
        if lifted is None:
            return _VIEW_DEFAULTS[name]()
        if isinstance(lifted, Mapping):
            return lifted.get(name, _VIEW_DEFAULTS[name]())
        return encode(getattr(lifted, name))
    return property(get, doc=f"Deprecated, read-only: ``sections[{TOP_LEVEL_SECTION!r}].{name}`` as results.json's "
                             "JSON (a copy: read the section's record instead, its fields typed; empty when the "
                             "results have none).")


@dataclass
class Results:
    """results.json: the frame (model, judges, dataset, run, notes, generated, plots) and the suites' sections
    (``sections``: each suite's record by its key). The top-level section's old fields (``n``, ``conditions``,
    ``recovery``, ... TOP_LEVEL_KEYS) remain as read-only views of its record for the Python API, each its part as
    results.json's JSON (as inspect-ai kept its moved fields): deprecated, read ``sections[TOP_LEVEL_SECTION]`` (or
    ``section(key)``; CarryOnBench's: ``carryon_eval.suites.carryonbench.section.of``) instead, its parts typed."""
    model: str = "unknown"
    judges: JudgesInfo = field(default_factory=JudgesInfo)
    dataset: ResultsDataset = field(default_factory=ResultsDataset)
    run: ResultsRun = field(default_factory=ResultsRun)
    notes: list[str] = field(default_factory=list)
    generated: Generated = field(default_factory=Generated)
    plots: Optional[PlotsInfo] = None
    #: each suite's section (suite.report.section -> its record, or its JSON where its suite declares no record
    #: type), in the suites' rank order
    sections: dict[str, Any] = field(default_factory=dict)
    schema_version: int = RESULTS_SCHEMA_VERSION

    n = _old_field("n")
    conditions = _old_field("conditions")
    recovery = _old_field("recovery")
    #: BC minus NC utility on the same queries and lengths (the suite's summary; {} in results.json written before it)
    clarification_effect = _old_field("clarification_effect")
    unscored = _old_field("unscored")
    by_turn = _old_field("by_turn")
    move_effects = _old_field("move_effects")
    turn1_bins = _old_field("turn1_bins")
    by_domain = _old_field("by_domain")
    bootstrap = _old_field("bootstrap")
    estimators = _old_field("estimators")
    null_meaning = _old_field("null_meaning")
    judge_context = _old_field("judge_context")
    #: what the utilities measure: "benutil" (Ben-Util's checklists) or "rubric" (OpenSafeIntent's 1-4 helpfulness
    #: rubric as (score - 1) / 3); two runs of different measures are never compared in one column
    utility_measure = _old_field("utility_measure")

    def __post_init__(self) -> None:
        for section in self.sections.values():
            if hasattr(section, "placed_in"):     # a record whose renderers read the frame beside it
                section.placed_in(self)
        self.judges._kinds = _judges_of(self.sections.get(TOP_LEVEL_SECTION))

    def put_section(self, key: str, section: Any) -> None:
        """Add a suite's section (its record); a section whose judges are incomplete makes the run's so."""
        self.sections[key] = section
        if hasattr(section, "placed_in"):         # a record whose renderers read the frame beside it
            section.placed_in(self)
        judges = _judges_of(section)
        if getattr(judges, "complete", None) is False:
            self.judges.complete = False
        if key == TOP_LEVEL_SECTION:
            self.judges._kinds = judges

    def section(self, key: str) -> Any:
        """A suite's section record (None when the run has none)."""
        return self.sections.get(key)

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
        section's keys (and its kinds of ``judges``) only when the run has it, its further keys and each other
        suite's section last, under their own keys."""
        lifted = self.sections.get(TOP_LEVEL_SECTION)
        own = _encode(lifted) if lifted is not None else {}
        out: dict[str, Any] = {"schema_version": self.schema_version}
        for name in (*_FRAME, None):
            out.update((k, own[k]) for k in _LIFTED_AT.get(name, ()) if lifted is not None)
            value = getattr(self, name) if name is not None else None
            if name is None or (name == "plots" and value is None):
                continue
            out[name] = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
            if value is self.judges:    # the top-level section's kinds of judges open it (only with the section)
                out[name] = {**kinds_json(_judges_of(lifted)), **out[name]}
        out.update(self.keyed_sections())
        return out

    def keyed_sections(self) -> dict[str, Any]:
        """results.json's keys that are sections of their own, as JSON: the top-level section's further keys (e.g.
        its intent contrasts), then every other suite's section under its key."""
        lifted = self.sections.get(TOP_LEVEL_SECTION)
        own = _encode(lifted) if lifted is not None else {}
        out = {k: v for k, v in own.items() if k not in TOP_LEVEL_KEYS and k != "judges" and v is not None}
        out.update((name, _encode(section)) for name, section in self.sections.items()
                   if name != TOP_LEVEL_SECTION and section is not None)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Results":
        """results.json read back: each section by its suite's record type (its JSON where it declares none); the
        top-level section from its keys, its ``judges`` and the keys no suite's section claims."""
        types = dict(_section_types())
        values = {k: d[k] for k in _FRAME if k in d}
        for name, record in _SECTIONS.items():
            if isinstance(values.get(name), dict):
                values[name] = record(**_known(record, values[name]))
        sections: dict[str, Any] = {}
        if "conditions" in d:
            claimed = {*TOP_LEVEL_KEYS, *_FRAME, "schema_version", *types}
            frame_judges = {f.name for f in dataclasses.fields(JudgesInfo)}
            own = {**{k: d[k] for k in TOP_LEVEL_KEYS if k in d},
                   "judges": {k: v for k, v in (d.get("judges") or {}).items() if k not in frame_judges},
                   **{k: v for k, v in d.items() if k not in claimed and isinstance(v, dict)}}
            sections[TOP_LEVEL_SECTION] = decode_section(types.get(TOP_LEVEL_SECTION), own)
        sections.update((k, decode_section(types.get(k), v)) for k, v in d.items()
                        if k in types and k != TOP_LEVEL_SECTION and isinstance(v, dict))
        if "conditions" not in d:     # no top-level section: a key no suite claims is kept as it was
            sections.update((k, v) for k, v in d.items()
                            if k not in _FRAME and k != "schema_version" and k not in types and isinstance(v, dict))
        return cls(**values, sections=sections, schema_version=_version(d))


def _encode(section: Any) -> Any:
    return section.to_json() if hasattr(section, "to_json") else section


def _judges_of(section: Any) -> Any:
    """A section's judges record (or JSON; None: it has none)."""
    return section.get("judges") if isinstance(section, Mapping) else getattr(section, "judges", None)


def decode_section(record: Any, data: dict[str, Any]) -> Any:
    """A section's JSON read as its record type (None: kept as JSON)."""
    if record is None:
        return data
    record = record.resolve() if hasattr(record, "resolve") else record
    return record.from_json(data)
