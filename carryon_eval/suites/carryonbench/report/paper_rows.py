"""The paper's Table 2 as reported (data/paper_table2.json: 14 target models, Turn 1 / Oracle / BC / NC utility
and harm, Recovery%), as leaderboard entries with the status ``reported``: shown beside measured runs in a group of
their own (their simulator, judges and dataset build are the paper's), never ranked or paired with them, with no
interval, scored share or per-conversation score, since the paper reports none. Its record gives ``paper_entries``
as its SuiteReport's ``reported``."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Optional

from carryon_eval.codec import OMIT_NONE, Record

from carryon_eval.run.records import DatasetRef, RoleRecord, RunMeta
from carryon_eval.run.results import ResultsDataset, ResultsRun, Results
from carryon_eval.run.results import Generated
from carryon_eval.metrics.number import MetricBlock
from carryon_eval.suites.carryonbench.metrics.condition import ConditionBlock, Recovery
from carryon_eval.suites.carryonbench.section import (SECTION, CarryOnBenchSection, JudgeKind, SectionJudges,
                                                     UtilityJudges)
from carryon_eval.suite.inputs import RunEntry

DATA_FILE = "paper_table2.json"
NOT_REPORTED = "not reported in the paper's Table 2"
REPORTED = "reported"           # carryon_eval.report.leaderboard.REPORTED, the status of such a row


@dataclass(frozen=True)
class PaperSetup(Record):
    """What the paper's numbers stand on: its simulator, its judges, its dataset build and its conditions."""
    user_simulator: str = ""
    utility_judge: str = ""
    safety_judge: str = ""
    dataset: str = ""
    conditions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PaperRow(Record):
    """One model's row: per condition its reported numbers by name, and Recovery%."""
    model: str = ""
    family: Optional[str] = None
    turn1: dict[str, float] = field(default_factory=dict)
    oracle: dict[str, float] = field(default_factory=dict)
    bc: dict[str, float] = field(default_factory=dict)
    nc: dict[str, float] = field(default_factory=dict)
    recovery: Optional[float] = None
    note: Optional[str] = field(default=None, metadata=OMIT_NONE)

    def numbers(self, condition: str) -> dict[str, float]:
        return getattr(self, condition)


@dataclass(frozen=True)
class PaperTable(Record):
    """data/paper_table2.json: its version, citation, setup, what differs from a measured run, and the rows."""
    version: int = 0
    source: str = ""
    citation: str = ""
    setup: PaperSetup = field(default_factory=PaperSetup)
    differs: str = ""
    units: dict[str, str] = field(default_factory=dict)
    rows: list[PaperRow] = field(default_factory=list)


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """data/paper_table2.json as it is."""
    return json.loads((resources.files("carryon_eval.suites.carryonbench") / "data" / DATA_FILE)
                      .read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def paper_table() -> PaperTable:
    """data/paper_table2.json as its record."""
    return PaperTable.from_json(table())


def _block(numbers: dict[str, float]) -> ConditionBlock:
    """One condition's block: the reported numbers, no interval, no scored share."""
    names = ("utility", "harm", "violation_rate", "redundancy", "utility_delta", "harm_delta", "violation_rate_delta")
    return ConditionBlock(MetricBlock({n: numbers.get(n) for n in names}, {},
                                      {n: NOT_REPORTED for n in names if numbers.get(n) is None}), scored_share={})


def paper_results(row: PaperRow, doc: PaperTable) -> Results:
    setup = doc.setup
    notes = [doc.differs, f"Source: {doc.citation}", *([f"{row.model}: {row.note}"] if row.note else [])]
    judges = SectionJudges(UtilityJudges([setup.utility_judge], ["the paper's"]),
                           JudgeKind([setup.safety_judge], ["the paper's"]))
    section = CarryOnBenchSection(conditions={c: _block(row.numbers(c)) for c in setup.conditions},
                                  recovery=Recovery(row.recovery, None, None, scored_share=None), judges=judges)
    return Results(
        model=row.model, sections={SECTION: section},
        dataset=ResultsDataset(source=setup.dataset), run=ResultsRun(folder="", status=[REPORTED]), notes=notes,
        generated=Generated(by=f"{doc.source} (data file version {doc.version})"))


def paper_entries() -> list[RunEntry]:
    """One leaderboard entry per row of the paper's Table 2, labelled "<model> (paper)"."""
    doc = paper_table()
    meta = RunMeta(dataset=DatasetRef(source=doc.setup.dataset), roles={"user": RoleRecord(model=doc.setup.user_simulator)})
    return [RunEntry(f"{row.model} (paper)", f"reported: {doc.source}", paper_results(row, doc), [], meta)
            for row in doc.rows]
