"""Versioned prompt files: the only place prompt text lives.

A prompt file is `carryon_eval/prompts/<group>/<name>.txt`:

    version: 1
    ---
    Body text with $placeholders (string.Template syntax; write $$ for a literal dollar).

`load_prompt("user_simulator/pushback")` returns the body, its version and the sha256 of the whole
file; the hashes go into MANIFEST.json and run metadata so that a result names the exact prompt.
"""
from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PROMPT_DIR = Path(__file__).parent / "prompts"


class PromptError(Exception):
    pass


@dataclass(frozen=True)
class Prompt:
    name: str          # "group/name"
    version: str
    body: str
    sha256: str

    @property
    def ref(self) -> str:
        """What to record next to an output: name@version#shortsha."""
        return f"{self.name}@{self.version}#{self.sha256[:12]}"

    def render(self, **values: object) -> str:
        try:
            return string.Template(self.body).substitute({k: str(v) for k, v in values.items()})
        except KeyError as exc:
            raise PromptError(f"prompt {self.name}: no value for placeholder ${exc.args[0]}") from None


@lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    path = PROMPT_DIR / f"{name}.txt"
    if not path.is_file():
        raise PromptError(f"prompt file {path} not found")
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    head, sep, body = text.partition("\n---\n")
    if not sep or not head.startswith("version:"):
        raise PromptError(f"prompt file {path}: expected a 'version: N' line, then '---', then the body")
    return Prompt(name=name, version=head.split(":", 1)[1].strip(), body=body.strip("\n") + "\n",
                  sha256=hashlib.sha256(raw).hexdigest())


def prompt_hashes(group: str) -> dict[str, str]:
    """{name: ref} for every prompt file of a group, sorted by name (for manifests and run metadata)."""
    return {f"{group}/{p.stem}": load_prompt(f"{group}/{p.stem}").ref
            for p in sorted((PROMPT_DIR / group).glob("*.txt"))}
