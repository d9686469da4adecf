"""The triplet wing's section of results.json as a record (SuiteReport.record): OpenSafeIntent's section on the
dataset's triplets with its ``definitions`` first (TripletSection), or, in a run folder written before triplets took
OpenSafeIntent's definitions, the earlier section as it was (EarlierTripletSection: kept as its JSON, shown as it
was). ``TripletSection.from_json`` reads either; ``to_json`` writes each exactly as it was read."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Union

from carryon_eval.suites.opensafeintent.public import OpenSafeIntentComparison, OpenSafeIntentSection

DEFINITIONS = "OpenSafeIntent's reference definitions (the release's judges and metrics), 0-1 scale"


@dataclass
class EarlierTripletSection:
    """A triplet section of this project's earlier definitions (legacy.py), as it was written."""
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.data)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "EarlierTripletSection":
        return cls(dict(d))


@dataclass
class TripletSection(OpenSafeIntentSection):
    """results.json's ``triplet`` section: OpenSafeIntent's, on the dataset's triplets, under ``definitions``."""
    definitions: str = DEFINITIONS

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        return {"definitions": out.pop("definitions"), **out}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Union["TripletSection", EarlierTripletSection]:    # type: ignore[override]
        if "reference" not in d:            # none of OpenSafeIntent's reference fields: the earlier definitions
            return EarlierTripletSection.from_json(d)
        return super().from_json(d)


#: what the ``triplet`` key of results.json holds
TripletSectionRecord = Union[TripletSection, EarlierTripletSection]

__all__ = ["DEFINITIONS", "EarlierTripletSection", "OpenSafeIntentComparison", "TripletSection", "TripletSectionRecord"]
