"""Versioned prompt files: the only place prompt text lives, and the one renderer of the project.

A prompt file is `<package>/prompts/<name>.txt` (the evaluator's in carryon_eval, the builder's in
builder), read with importlib.resources so that it works from a wheel as from a checkout:

    version: 1
    ---
    Body text with $placeholders (string.Template syntax; write $$ for a literal dollar).

A body may be split into chat messages by ``[system]`` / ``[user]`` lines (no such line: one user
message). `load_prompt("user_simulator/pushback")` returns the body, its version and the sha256 of the
whole file; the hashes go into MANIFEST.json and run metadata so that a result names the exact prompt.
The builder's prompts are named "builder/<name>" (`load_prompt("intent_writer", package="carryonbench_builder")`).
"""
from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

DEFAULT_PACKAGE = "carryon_eval"
#: A prompt's recorded name starts with its package's folder (the builder's prompts are "builder/<name>"), not
#: its import name, so that refs in manifests and runs read the same whatever the package installs as.
FOLDER_OF = {"carryonbench_builder": "builder"}
_SECTION = re.compile(r"^\[(system|user)\]\s*$", re.MULTILINE)


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
        """The whole body with its placeholders filled."""
        return self._fill(self.body, values)

    def messages(self, **values: object) -> list[dict[str, str]]:
        """The body as chat messages, one per ``[system]`` / ``[user]`` section. Placeholders are
        filled per section, so a value that contains a section line cannot split the prompt."""
        parts = _SECTION.split(self.body)
        if len(parts) == 1:
            return [{"role": "user", "content": self._fill(self.body, values).rstrip("\n")}]
        if parts[0].strip():
            raise PromptError(f"prompt {self.name}: text before the first [system]/[user] line")
        return [{"role": parts[i], "content": self._fill(parts[i + 1].strip("\n"), values)}
                for i in range(1, len(parts), 2)]

    def _fill(self, text: str, values: dict[str, object]) -> str:
        try:
            return string.Template(text).substitute({k: str(v) for k, v in values.items()})
        except KeyError as exc:
            raise PromptError(f"prompt {self.name}: no value for placeholder ${exc.args[0]}") from None


def _prompts_dir(package: str) -> resources.abc.Traversable:
    return resources.files(package) / "prompts"


@lru_cache(maxsize=None)
def load_prompt(name: str, package: str = DEFAULT_PACKAGE) -> Prompt:
    path = _prompts_dir(package).joinpath(*f"{name}.txt".split("/"))
    if not path.is_file():
        raise PromptError(f"prompt file {FOLDER_OF.get(package, package)}/prompts/{name}.txt not found")
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    head, sep, body = text.partition("\n---\n")
    if not sep or not head.startswith("version:"):
        raise PromptError(f"prompt file {FOLDER_OF.get(package, package)}/prompts/{name}.txt: expected a 'version: N' line, then '---', "
                          "then the body")
    full_name = name if package == DEFAULT_PACKAGE else f"{FOLDER_OF.get(package, package)}/{name}"
    return Prompt(name=full_name, version=head.split(":", 1)[1].strip(), body=body.strip("\n") + "\n",
                  sha256=hashlib.sha256(raw).hexdigest())


def prompt_hashes(group: str, package: str = DEFAULT_PACKAGE) -> dict[str, str]:
    """{name: ref} for every prompt file of a group, sorted by name (for manifests and run metadata)."""
    folder = _prompts_dir(package) / group if group else _prompts_dir(package)
    stems = sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))
    prefix = f"{group}/" if group else ""
    return {load_prompt(prefix + s, package).name: load_prompt(prefix + s, package).ref for s in stems}
