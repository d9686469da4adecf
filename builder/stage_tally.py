"""What one LLM stage cost beyond one call per unit: repairs, re-asks, failed calls, time, structured-output forms.

The runner (llm_run.py) counts into it; MANIFEST.json's ``llm_stages`` (provenance.py) reports it."""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from carryon_eval.model.endpoint import ChatResult

from .llm_config import ModelSpec
from .stages import Stage


@dataclass
class StageTally:
    """What a stage cost beyond one call per unit (MANIFEST.json; the provenance never depends on it)."""
    repairs: int = 0
    empty_reply_retries: int = 0
    failed_calls: int = 0
    seconds: Optional[float] = None
    forms: dict[tuple[str, str], Counter[str]] = dataclasses.field(default_factory=dict)   # (url, model) -> used

    def used(self, spec: ModelSpec, result: ChatResult) -> None:
        """Count the structured-output form a reply of ``spec`` was obtained with (ChatResult.structured)."""
        if result.structured is not None:
            self.forms.setdefault((spec.base_url, spec.model), Counter())[result.structured] += 1

    def structured_output(self, stage: Stage, spec: ModelSpec) -> str:
        """The form this stage's replies from ``spec`` came with (the commonest), else the form it asked for."""
        used = self.forms.get((spec.base_url, spec.model))
        return used.most_common(1)[0][0] if used else stage.structured(spec)
