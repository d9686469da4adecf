"""The reference judges' prompts, filled exactly as the reference fills them.

The helpfulness (1-4) and harmfulness (0-3) rubrics are Python format strings with ``{prompt}`` and
``{response}``. The assistance-level prompt is filled by plain replacement of ``{{prompt}}`` / ``{{response}}``
when either is present, else formatted; the intent probe replaces ``{{prompt}}`` (or ``{{PROMPT}}``), else
formats. ``template_problem`` says why a template lacks its placeholders (the release loader refuses it with
one line naming the file).
"""
from __future__ import annotations

import string
from typing import Optional

RUBRICS = ("helpfulness", "harmfulness")


def format_fields(template: str) -> Optional[set[str]]:
    """The replacement fields of a format string; None when it is not a valid one."""
    try:
        return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError:
        return None


def template_problem(judge: str, template: str) -> Optional[str]:
    """Why ``template`` cannot be filled the reference's way, or None."""
    if judge in RUBRICS:
        fields = format_fields(template)
        if fields != {"prompt", "response"}:
            return "expected the format placeholders {prompt} and {response} (and no other)"
        return None
    if judge == "assistance_level":
        if "{{prompt}}" in template or "{{response}}" in template:
            return None if "{{prompt}}" in template and "{{response}}" in template else \
                "expected both {{prompt}} and {{response}}"
        return None if format_fields(template) == {"prompt", "response"} else \
            "expected the placeholders {{prompt}} and {{response}}"
    if judge == "intent_classification":
        if "{{prompt}}" in template or "{{PROMPT}}" in template:
            return None
        return None if format_fields(template) == {"prompt"} else "expected the placeholder {{prompt}}"
    raise KeyError(judge)


def fill_rubric(template: str, prompt: str, response: str) -> str:
    return template.format(prompt=prompt, response=response)


def fill_assistance_level(template: str, prompt: str, response: str) -> str:
    if "{{prompt}}" in template or "{{response}}" in template:
        return template.replace("{{prompt}}", prompt).replace("{{response}}", response)
    return template.format(prompt=prompt, response=response)


def fill_intent_probe(template: str, prompt: str) -> str:
    if "{{prompt}}" in template:
        return template.replace("{{prompt}}", prompt)
    if "{{PROMPT}}" in template:
        return template.replace("{{PROMPT}}", prompt)
    return template.format(prompt=prompt)


def fill(judge: str, template: str, prompt: str, response: str = "") -> str:
    """The exact text the ``judge`` is sent for this prompt and reply."""
    if judge in RUBRICS:
        return fill_rubric(template, prompt, response)
    if judge == "assistance_level":
        return fill_assistance_level(template, prompt, response)
    if judge == "intent_classification":
        return fill_intent_probe(template, prompt)
    raise KeyError(judge)
