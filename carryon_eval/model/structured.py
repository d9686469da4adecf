"""Which form of structured output an endpoint accepts, learned once per endpoint by the client.

Servers disagree on ``response_format``. OpenAI (and vLLM, SGLang, llama.cpp's own server, which runs the
embedded model) take ``{"type": "json_schema", "json_schema": {"name", "strict", "schema"}}``;
llama-cpp-python's server takes only ``{"type": "json_object", "schema": ...}`` and answers the other form
with HTTP 500 (a validation error) rather than 400; some servers take none.

A request that asks for a form walks down a ladder until the server takes one:

    json_schema  ->  json_object with the same schema  ->  none (the request without response_format)
    json_object  ->  none

Going down a rung is free (it spends none of the client's transport retries). A rung is left on a
400/422, and on a 5xx while the endpoint has never accepted that form: the 500 of a server that does
not know the form. If the bottom rung (or a form the endpoint did accept) then fails with a 5xx too, the
server is failing whatever the form: the request goes back up to the rungs left on a 5xx and from then
on counts every 5xx as an ordinary retry. Once a rung succeeds, the endpoint remembers as rejected only the
forms it left on a refusal whose message names the form (response_format, json_schema, json_object): a
transient 5xx, or a 400 about something unnamed, moves that one request down, never the later ones. Each ``ChatResult.structured`` records
the form its reply was obtained with.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from carryon_eval.codec import Record

#: The forms, most specific first. "none": no response_format (the prompt alone asks for JSON).
FORMS: tuple[str, ...] = ("json_schema", "json_object", "none")


def names_form(message: str) -> bool:
    """Whether an error message is about structured output (a refusal that names the form)."""
    text = (message or "").lower()
    return any(word in text for word in ("response_format", "response format", "json_schema", "json_object"))


@dataclass
class JsonSchemaSpec(Record):
    """A json_schema response_format's ``json_schema``: its name, schema and strictness (each as given)."""
    name: Any = None
    schema: Any = None
    strict: Any = None


@dataclass
class ResponseFormat(Record):
    """A request's response_format, the fields read from it: its form (``type``) and the schema either form
    carries (json_schema's in ``json_schema``, json_object's own ``schema``)."""
    type: Any = None
    json_schema: Optional[JsonSchemaSpec] = None
    schema: Any = None


def form_of(response_format: Optional[dict[str, Any]]) -> Optional[str]:
    """The form a response_format asks for (its "type"), or None when there is none."""
    if response_format is None:
        return None
    return str(ResponseFormat.from_json(response_format).type or "none")


def schema_of(response_format: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The JSON schema carried by either form, if any."""
    read = ResponseFormat.from_json(response_format)
    if form_of(response_format) == "json_schema":
        return read.json_schema.schema if isinstance(read.json_schema, JsonSchemaSpec) else None
    return read.schema if isinstance(read.schema, dict) else None


def ladder(response_format: dict[str, Any]) -> list[tuple[str, Optional[dict[str, Any]]]]:
    """The (form, response_format) rungs a request may try, the asked form first."""
    asked = form_of(response_format) or "none"
    rungs: list[tuple[str, Optional[dict[str, Any]]]] = [(asked, response_format)]
    if asked == "json_schema":
        schema = schema_of(response_format)
        rungs.append(("json_object", {"type": "json_object", "schema": schema} if schema is not None
                      else {"type": "json_object"}))
    rungs.append(("none", None))
    return rungs


class StructuredForms:
    """What one endpoint has shown about structured output: the forms it accepted and rejected."""

    def __init__(self) -> None:
        self.accepted: set[str] = set()
        self.rejected: set[str] = set()

    @property
    def learned(self) -> Optional[str]:
        """The most specific form the endpoint accepted ("none" if it took none), or None (not known yet)."""
        return next((f for f in FORMS if f in self.accepted), None)

    @property
    def supports_response_format(self) -> Optional[bool]:
        """True once it took some response_format, False once it took none of the forms, None before."""
        if self.accepted - {"none"}:
            return True
        return False if self.rejected else None

    def probe(self, response_format: dict[str, Any]) -> "FormProbe":
        return FormProbe(self, response_format)


class FormProbe:
    """One request's walk down the ladder (see the module docstring)."""

    def __init__(self, forms: StructuredForms, response_format: dict[str, Any]) -> None:
        self.forms = forms
        self.rungs = ladder(response_format)
        self.pos = 0
        self.left: dict[str, int] = {}    # form -> the status it was left on, in this request
        self.named: set[str] = set()      # the forms left on a refusal that named the form
        self.probing = True               # False once a 5xx proved to be the server's, not the form's
        self.refresh()

    @property
    def form(self) -> str:
        return self.rungs[self.pos][0]

    @property
    def response_format(self) -> Optional[dict[str, Any]]:
        return self.rungs[self.pos][1]

    def refresh(self) -> None:
        """Skip the rungs the endpoint is known to reject (learned, perhaps, while this request waited)."""
        while self.form != "none" and self.form in self.forms.rejected:
            self.pos += 1

    def refused(self, status: int, message: str = "") -> bool:
        """The server answered the current rung with ``status`` (and ``message``). True: go down a rung (a
        free retry)."""
        if self.form == "none":
            return False
        form_refusal = status in (400, 422) or (
            status >= 500 and self.probing and self.form not in self.forms.accepted)
        if not form_refusal:
            return False
        self.left[self.form] = status
        if names_form(message):
            self.named.add(self.form)
        self.pos += 1
        self.refresh()
        return True

    def server_failed(self, status: Optional[int]) -> None:
        """A retryable failure that was not a form refusal. If it is a 5xx, the earlier 5xx were the server
        failing too: go back to the first rung left on a 5xx and stop treating 5xx as refusals."""
        if status is None or status < 500 or not self.probing:
            return
        self.probing = False
        for i, (form, _) in enumerate(self.rungs):
            if self.left.get(form, 0) >= 500:
                self.pos = i
                for later, _ in self.rungs[i:]:
                    self.left.pop(later, None)
                return

    def succeeded(self) -> list[str]:
        """Record the rung that worked and the forms left on the way; the forms newly known as rejected."""
        self.forms.accepted.add(self.form)
        new = [f for f in self.left if f in self.named and f not in self.forms.rejected and f not in self.forms.accepted]
        self.forms.rejected.update(new)
        return new
