"""An inspect-ai model as a ``ChatEndpoint``: the one adapter through which the project's user simulator and
scorers (and the target's replies) run inside an inspect task, on any provider inspect reaches.

    endpoint = InspectEndpoint(get_model(role="grader"))
    judgment = await make_scorer("safety").score(endpoint, case)

Generation parameters map to inspect's ``GenerateConfig`` (temperature, max_tokens, seed; a JSON-schema
``response_format`` becomes a ``ResponseSchema``; ``top_logprobs`` asks for logprobs). inspect does the
retries, rate limits and logging (every call is a model event of its sample, counted per model role); this
adapter only translates, and counts usage per stage in its ledger as the project's client does. A call that
fails for good is an ``EndpointError``, as from the project's client.
"""
from __future__ import annotations

from typing import Any, Optional

from carryon_eval import defaults
from carryon_eval.model.endpoint import ChatResult, EndpointConfig, EndpointError, UsageLedger
from carryon_eval.model.structured import ResponseFormat, form_of

_STOP = {"stop": "stop", "max_tokens": "length", "model_length": "length", "content_filter": "content_filter"}


def model_name(model: Any) -> str:
    """The model's name as its server knows it (inspect's provider prefix and service left out)."""
    api = getattr(model, "api", None)
    service_name = getattr(api, "service_model_name", None)
    if callable(service_name):
        return str(service_name())
    return str(getattr(model, "name", model))


class InspectEndpoint:
    """``ChatEndpoint`` over an ``inspect_ai.model.Model``."""

    def __init__(self, model: Any, usage: Optional[UsageLedger] = None) -> None:
        self.model = model
        base_url = getattr(getattr(model, "api", None), "base_url", None) or ""
        self.config = EndpointConfig(base_url=str(base_url), model=model_name(model))
        self.usage = usage if usage is not None else UsageLedger()

    async def chat(self, messages: list[dict], *, stage: str, temperature: float = 0.0,
                   max_tokens: int = defaults.TARGET_MAX_TOKENS, seed: Optional[int] = None,
                   response_format: Optional[dict] = None, top_logprobs: Optional[int] = None) -> ChatResult:
        from inspect_ai.model import GenerateConfig

        config = GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=seed,
                                response_schema=_schema(response_format),
                                logprobs=True if top_logprobs else None, top_logprobs=top_logprobs or None)
        try:
            output = await self.model.generate(_inspect_messages(messages), config=config)
        except Exception as exc:  # noqa: BLE001 - inspect has retried; the phases expect an EndpointError
            raise EndpointError(f"{self.config.model}: {type(exc).__name__}: {exc}") from exc
        if output.error:
            raise EndpointError(f"{self.config.model}: {output.error}")
        usage = output.usage
        result = ChatResult(
            text=output.completion,
            finish_reason=_STOP.get(output.stop_reason, output.stop_reason),
            prompt_tokens=int(usage.input_tokens) if usage else 0,
            completion_tokens=int(usage.output_tokens) if usage else 0,
            cached=False, top_logprobs=_top_logprobs(output),
            structured="json_schema" if response_format is not None else None)
        self.usage.add(stage, self.config.model, result)
        return result

    async def check(self) -> None:
        """inspect checks its models itself when the eval starts."""

    async def aclose(self) -> None:
        """inspect owns the model's client."""


def _inspect_messages(messages: list[dict]) -> list[Any]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    kinds = {"user": ChatMessageUser, "assistant": ChatMessageAssistant, "system": ChatMessageSystem}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


def _schema(response_format: Optional[dict]) -> Any:
    """The project's OpenAI ``response_format`` (a json_schema) as inspect's ResponseSchema."""
    if not response_format or form_of(response_format) != "json_schema":
        return None
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    spec = ResponseFormat.from_json(response_format).json_schema
    return ResponseSchema(name=spec.name, json_schema=JSONSchema.model_validate(spec.schema), strict=spec.strict)


def _top_logprobs(output: Any) -> Optional[list[tuple[str, float]]]:
    choice = output.choices[0] if output.choices else None
    logprobs = getattr(choice, "logprobs", None)
    if logprobs is None or not logprobs.content:
        return None
    first = logprobs.content[0]
    return [(t.token, float(t.logprob)) for t in (first.top_logprobs or [])]
