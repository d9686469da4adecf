"""Which model plays each role of the LLM stages, and how it is called: ModelSpec and LLMConfig."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol

from carryon_eval import defaults

from .limits import GENERATOR_SEED, HARM_STYLES, MAX_ITEMS, MIN_HARMLESS, MIN_ITEMS, MODEL_ROLES

STRUCTURED_STYLES = ("json_schema", "json_object", "none")


@dataclass(frozen=True)
class StageParams:
    """Generation parameters of a stage. ``typical_tokens`` is the usual completion size, used by
    --dry-run next to max_tokens (measured order of magnitude for instruction-tuned models)."""
    temperature: float
    max_tokens: int
    typical_tokens: int


class StageCall(Protocol):
    """What the settings need of a stage record (builder/stages.py's Stage): who plays it and its parameters."""
    role: str
    params: StageParams
    per_generator: bool


@dataclass(frozen=True)
class ModelSpec:
    """One model at one OpenAI-compatible endpoint.

    structured: how to ask for JSON - "json_schema" (OpenAI structured output; the client drops it by
    itself if the server rejects it), "json_object" (llama.cpp style {"type": "json_object", "schema":
    ...}: grammar-constrained JSON) or "none".
    """
    base_url: str
    model: str
    structured: str = "json_schema"
    concurrency: int = defaults.CONCURRENCY
    timeout: float = defaults.TIMEOUT
    local: bool = False              # the embedded model (its card and output say what its quality means)
    # The role's request options (None: not set; see carryon_eval.endpoint.EndpointConfig)
    max_tokens: Optional[int] = None  # caps each of the role's stages' max_tokens
    temperature: Any = None           # overrides the stages' temperature: a number, or "default" (not sent)
    reasoning_effort: Optional[str] = None
    system_prompt: Optional[str] = None
    extra_body: Optional[dict[str, Any]] = None
    api_key_env: Optional[str] = None  # the variable of its key ("": none; None: LLMConfig's): builder.roles.keys

    def request(self) -> dict[str, Any]:
        """The request options that are set (MANIFEST.json records them)."""
        options = {"temperature": self.temperature, "reasoning_effort": self.reasoning_effort,
                   "system_prompt": self.system_prompt, "extra_body": self.extra_body}
        return {k: v for k, v in options.items() if v is not None}

    def endpoint_key(self) -> tuple[str, str, str]:
        """One client per model, endpoint, request options and key."""
        return self.base_url, self.model, json.dumps([self.request(), self.api_key_env], sort_keys=True)

    def __post_init__(self) -> None:
        if self.structured not in STRUCTURED_STYLES:
            raise ValueError(f"structured must be one of {STRUCTURED_STYLES}, got {self.structured!r}")


@dataclass
class LLMConfig:
    roles: dict[str, ModelSpec]          # intent_writer, harm_classifier, decomposer, merger, item_filter
    generators: list[ModelSpec]          # one or more (the paper uses 5)
    harm_classifier_style: str = "judge"
    api_key_env: str = defaults.API_KEY_ENV
    cache_dir: Optional[Path] = None
    max_tokens: Optional[int] = None     # caps every stage's max_tokens (e.g. for a small local model)
    generator_temperature: float = 0.7
    generator_seed: int = GENERATOR_SEED
    max_retries: int = defaults.MAX_RETRIES
    backoff_base: float = defaults.BACKOFF_BASE
    progress: Optional[bool] = None      # None: on a terminal only
    min_items: int = MIN_ITEMS           # a query whose checklist ends up shorter is dropped
    max_items: int = MAX_ITEMS           # the merged checklist is cut to this many items
    skip_stages: tuple[str, ...] = ()    # stages the source does not need (Source.skip_stages)
    stage_prompts: dict[str, str] = field(default_factory=dict)   # stage -> the source's prompt file

    def __post_init__(self) -> None:
        missing = [r for r in MODEL_ROLES if r not in self.roles]
        if missing:
            raise ValueError(f"no model for role(s) {', '.join(missing)}")
        if not self.generators:
            raise ValueError("at least one generator is needed")
        if self.harm_classifier_style not in HARM_STYLES:
            raise ValueError(f"harm classifier style must be one of {HARM_STYLES}")
        if not 1 <= self.min_items <= self.max_items:
            raise ValueError(f"checklist size: need 1 <= --min-items ({self.min_items}) <= --max-items "
                             f"({self.max_items})")

    def spec(self, role: str) -> ModelSpec:
        return self.roles[role]

    def params(self, stage: StageCall) -> StageParams:
        """The stage's parameters; max_tokens capped by ``max_tokens``, or on the embedded model (every model of
        the stage local) by defaults.LOCAL_BUILD_MAX_TOKENS; a role's own max_tokens (ModelSpec) replaces it."""
        p = stage.params
        temperature = self.generator_temperature if stage.per_generator else p.temperature
        cap = self.max_tokens
        if cap is None and all(sp.local for sp in self.stage_models(stage)):
            cap = defaults.LOCAL_BUILD_MAX_TOKENS
        max_tokens = min(p.max_tokens, cap) if cap else p.max_tokens
        own = [sp.max_tokens for sp in self.stage_models(stage) if sp.max_tokens is not None]
        if own:                          # the role's own --ROLE-max-tokens replaces the stage's
            max_tokens = min(own)
        return StageParams(temperature, max_tokens, min(p.typical_tokens, max_tokens))

    def min_harmless(self) -> int:
        """Harmless answers a query needs: the paper's 3, or every generator's when there are fewer."""
        return min(MIN_HARMLESS, len(self.generators))

    def harm_rule(self) -> str:
        """The harm filter's rule as this config applies it (generators, threshold, classifier)."""
        style = "WildGuard-style classifier" if self.harm_classifier_style == "wildguard" else "LLM judge"
        n = len(self.generators)
        return (f"a query is kept only with at least {self.min_harmless()} harmless answers of "
                f"{n} generator{'s' if n != 1 else ''} ({', '.join(sp.model for sp in self.generators)}), "
                f"judged by {self.roles['harm_classifier'].model} ({style}); harmful answers are excluded")

    def stage_models(self, stage: StageCall) -> list[ModelSpec]:
        return list(self.generators) if stage.per_generator else [self.roles[stage.role]]
