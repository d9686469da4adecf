"""The configs a dataset card declares, and proof that `datasets.load_dataset` reads each as the card documents.

A researcher's first contact with the dataset is `load_dataset(FOLDER, CONFIG, split="test")`, so `verify`
loads every config the card's YAML declares exactly that way (offline, from the folder, in a temporary cache
so nothing is left behind) and compares its columns and types with the card's field table (a "### `config`"
heading, then a "| field | type | description |" table). A config with no rows must not be declared (`datasets`
cannot load an empty split); the card must say why each config of the builder is absent.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any, Optional

import yaml

from .dataset_folder import CONFIG_ORDER, parquet_name

CARD = "README.md"
_HEADING = re.compile(r"^###\s+`([A-Za-z0-9_-]+)`")
_ROW = re.compile(r"^\|(.+)\|\s*$")


class CardError(ValueError):
    """The card's front matter or field tables cannot be read."""


def front_matter(card: str) -> dict[str, Any]:
    """The card's YAML header (between the leading `---` lines)."""
    if not card.startswith("---\n"):
        raise CardError("no YAML front matter")
    end = card.find("\n---\n", 4)
    if end < 0:
        raise CardError("the YAML front matter is not closed by '---'")
    try:
        header = yaml.safe_load(card[4:end + 1])
    except yaml.YAMLError as exc:
        raise CardError(f"YAML front matter does not parse ({str(exc).splitlines()[0]})") from None
    if not isinstance(header, dict):
        raise CardError("the YAML front matter is not a mapping")
    return header


def declared_config_names(card: str) -> list[str]:
    """The `config_name` of every entry of the card's `configs`, in card order."""
    configs = front_matter(card).get("configs") or []
    if not isinstance(configs, list) or not all(isinstance(c, dict) and "config_name" in c for c in configs):
        raise CardError("`configs` is not a list of entries with a config_name")
    return [str(c["config_name"]) for c in configs]


def field_tables(card: str) -> dict[str, list[tuple[str, str]]]:
    """config -> [(field, type)] from the first Markdown table under each "### `config`" heading."""
    tables: dict[str, list[tuple[str, str]]] = {}
    config: Optional[str] = None
    for line in card.splitlines():
        heading = _HEADING.match(line)
        if heading or line.startswith("#"):
            config = heading.group(1) if heading else None
            continue
        row = _ROW.match(line.strip())
        if config is None:
            continue
        if not row:
            if config in tables:
                config = None     # the table has ended: later tables of the section are not field tables
            continue
        cells = [c.strip() for c in row.group(1).split("|")]
        if len(cells) >= 2 and cells[0] != "field" and not set(cells[0]) <= {"-", ":"}:
            tables.setdefault(config, []).append((cells[0], cells[1]))
    return tables


def feature_type(feature: Any) -> str:
    """A `datasets` feature spelled as in the card's field tables: string, int64, list of string."""
    dtype = getattr(feature, "dtype", None)
    if type(feature).__name__ == "Value" and dtype:
        return str(dtype)
    inner = getattr(feature, "feature", None)
    if inner is not None:
        return f"list of {feature_type(inner)}"
    return type(feature).__name__


def column_problems(config: str, loaded: list[tuple[str, str]], documented: list[tuple[str, str]]) -> list[str]:
    """How the loaded (column, type) list differs from the card's field table; empty when it matches."""
    if loaded == documented:
        return []
    got, want = dict(loaded), dict(documented)
    parts = []
    if missing := [c for c in want if c not in got]:
        parts.append(f"missing {missing}")
    if extra := [c for c in got if c not in want]:
        parts.append(f"not in the card {extra}")
    parts += [f"{c} is {got[c]}, the card says {want[c]}" for c in want if c in got and got[c] != want[c]]
    if not parts:
        parts.append(f"order {[c for c, _ in loaded]}, the card's {[c for c, _ in documented]}")
    return [f"{CARD}: config {config!r}: columns differ from the card's field table: {'; '.join(parts)}"]


def _one_line(exc: BaseException) -> str:
    """The exception and its causes on one line: DatasetGenerationError hides the pyarrow error."""
    parts: list[str] = []
    cause: Optional[BaseException] = exc
    while cause is not None and len(parts) < 3:
        text = str(cause).strip().splitlines()
        parts.append(f"{type(cause).__name__}: {text[0]}" if text else type(cause).__name__)
        cause = cause.__cause__
    return " <- ".join(parts)


def load_problems(folder: Path, configs: list[str], fields: dict[str, list[tuple[str, str]]]) -> list[str]:
    """Load each config with `datasets.load_dataset(folder, config, split="test")`; one line per failure."""
    import datasets

    problems: list[str] = []
    verbosity, bars = datasets.logging.get_verbosity(), datasets.is_progress_bar_enabled()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)   # its own error log would be a second line
    datasets.disable_progress_bars()
    try:
        with tempfile.TemporaryDirectory(prefix="carryon-verify-") as cache:
            for config in configs:
                problems += _config_problems(folder, config, fields.get(config), cache)
    finally:
        datasets.logging.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bars()
    return problems


def _config_problems(folder: Path, config: str, documented: Optional[list[tuple[str, str]]], cache: str) -> list[str]:
    import datasets

    problems: list[str] = []
    if documented is None:
        problems.append(f"{CARD}: config {config!r} is declared but the card has no field table for it")
    try:
        ds = datasets.load_dataset(str(folder), config, split="test", cache_dir=cache)
    except Exception as exc:  # noqa: BLE001 - datasets raises many types; the user needs one line
        return problems + [f"{CARD}: config {config!r} does not load with datasets.load_dataset ({_one_line(exc)})"]
    if documented is not None:
        problems += column_problems(config, [(name, feature_type(f)) for name, f in ds.features.items()], documented)
    return problems


def declaration_problems(folder: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    """Every declared config loads and matches its field table; every written config is declared; the card
    says why each builder config it does not declare is absent. `skip`: configs already reported unreadable."""
    folder = Path(folder)
    path = folder / CARD
    if not path.is_file():
        return []        # a missing card is reported with the other missing files
    card = path.read_text(encoding="utf-8")
    try:
        declared = declared_config_names(card)
    except CardError as exc:
        return [f"{CARD}: cannot read the declared configs: {exc}"]
    problems = []
    for config in CONFIG_ORDER:
        if config in declared:
            continue
        if (folder / parquet_name(config)).is_file():
            problems.append(f"{parquet_name(config)}: config {config!r} is written but not declared in {CARD}")
        elif not re.search(rf"\bno {config}:", card):
            problems.append(f"{CARD}: config {config!r} is not declared and the card does not say why "
                            f"(expected 'no {config}: <reason>')")
    return problems + load_problems(folder, [c for c in declared if c not in skip], field_tables(card))
