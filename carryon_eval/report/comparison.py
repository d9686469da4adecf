"""compare.json's record and its one serializer: the runs compared (models, run folders, the table with each run's
status), each suite's part, the notes, the simulators, what could not be computed here, the paper's rows, the
figures, the pairwise family and the leaderboard's files.

    cmp = compare(rundirs)            # a Comparison
    cmp.models, cmp.parts["triplet"], cmp.results      # fields, never keys
    json.dumps(cmp.to_json())

compare.json's layout is known here only: the part of the suite whose section results.json holds at its top level
(run.results.TOP_LEVEL_SECTION) has its keys at compare.json's top level too, after the table, its "notes" being
the comparison's notes (the runs' status lines first); every other suite's part sits under its section's key (null
when no run has it). ``results`` and ``scores`` (each run's results.json and conversation rows, what the figures
and the leaderboard read) are never written.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from carryon_eval.codec import encode
from carryon_eval.run.results import TOP_LEVEL_SECTION, PlotsInfo, Results, decode_section
from carryon_eval.suite.records import SuiteSection

#: the leaderboard's pairwise family, in compare.json's order (leaderboard_page.family_record)
FAMILY = ("pairs", "pairs_method", "failure_modes")
#: compare.json's own keys (the frame); any other key is a suite's part, or the top-level part's
FRAME = ("models", "runs", "table", "notes", "simulators", "missing", "reported", "plots", *FAMILY, "leaderboard")


@dataclass
class Comparison:
    """compare.json as a record; ``parts``: each suite's part by its section key (None: no run has it)."""
    models: list[str]
    runs: list[str]
    table: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    simulators: list[str] = field(default_factory=list)
    parts: dict[str, Optional[SuiteSection]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)          # what a part could not compute here (one line each)
    reported: Optional[dict[str, Any]] = None                 # the papers' rows (`--paper-rows`), apart
    plots: Optional[PlotsInfo] = None                         # compare's figures (drawn, skipped and why)
    family: dict[str, Any] = field(default_factory=dict)      # FAMILY's keys, from the leaderboard
    leaderboard: Optional[dict[str, Any]] = None              # the leaderboard's files and figures
    results: list[Results] = field(default_factory=list)      # never written: each run's results
    scores: list[list[dict[str, Any]]] = field(default_factory=list)   # never written: each run's rows

    @property
    def lifted(self) -> Optional[SuiteSection]:
        """The part held at compare.json's top level (None: no run has it)."""
        return self.parts.get(TOP_LEVEL_SECTION)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"models": self.models, "runs": self.runs, "table": self.table}
        for key, value in (encode(self.lifted) or {}).items():
            if key != "missing":                  # gathered with every part's under the frame's "missing"
                out[key] = self.notes if key == "notes" else value
        out.setdefault("notes", self.notes)
        out["simulators"] = self.simulators
        out.update((key, encode(part)) for key, part in self.parts.items() if key != TOP_LEVEL_SECTION)
        if self.missing:                          # only then: compare.json is what it was when nothing is missing
            out["missing"] = self.missing
        if self.reported is not None:
            out["reported"] = self.reported
        if self.plots is not None:
            out["plots"] = dataclasses.asdict(self.plots)
        out.update(self.family)
        if self.leaderboard is not None:
            out["leaderboard"] = self.leaderboard
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Comparison":
        """compare.json read back (``results`` and ``scores`` empty: it holds neither); a key that is neither the
        frame's nor a suite's section is the top-level part's."""
        from carryon_eval.suite import suites

        types = {s.report.section: s.report.compare_record for s in suites()
                 if s.report is not None and s.report.compare is not None}
        lifted = [k for k in d if k not in FRAME and k not in types]
        parts: dict[str, Optional[SuiteSection]] = {}
        if lifted:        # its notes are the comparison's (the runs' status lines first)
            parts[TOP_LEVEL_SECTION] = decode_section(types.get(TOP_LEVEL_SECTION),
                                                      {k: [] if k == "notes" else v for k, v in d.items()
                                                       if k in lifted or k == "notes"})
        parts.update((k, v if v is None else decode_section(types.get(k), v)) for k, v in d.items()
                     if k in types and k != TOP_LEVEL_SECTION)
        own = {k: v for k, v in d.items() if k in FRAME and k not in FAMILY}
        if isinstance(own.get("plots"), dict):
            own["plots"] = PlotsInfo(**own["plots"])
        return cls(**own, parts=parts, family={k: d[k] for k in FAMILY if k in d})


def part_lines(part: Optional[SuiteSection], name: str) -> list[str]:
    """A suite's part's lines the frame gathers (its ``notes``, what it ``missing`` here): its record's field or
    its JSON's key (none: no run has the part)."""
    if part is None:
        return []
    return list((part.get(name) if isinstance(part, dict) else getattr(part, name, None)) or [])
