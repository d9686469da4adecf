"""What a data source of the builder is: the Source record, its queries, its card text and its errors.

A ``Source`` says everything the pipeline needs to know about where queries come from: how to read the file
(with one-line errors naming the file, the row and the field), which queries are selected, the columns of the
``queries`` config and how a query fills them, its license and gating, the card that describes a build of it,
the stages it leaves out or words differently, and its conversation plan. The pipeline, the stages and the CLI
never name a source; ``SOURCES`` lists them and ``detect`` picks one from what a path holds.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pyarrow as pa

from ..flows import conversation_plan


class SourceError(Exception):
    """Bad input: the message is one line naming file, row and field."""


@dataclass(frozen=True)
class SourceQuery:
    """One query of a source, with the two contexts the intent writer reads. Fields a source does not have
    are None (CASE-Bench's ratings) or empty (OpenSafeIntent's own intents and prompt-set)."""
    query_id: str
    query: str
    category: str
    domain: str
    benign_context: str
    malicious_context: str
    source_rows: tuple[int, ...]             # row indices in the source file
    safe_rate: Optional[float] = None        # CASE-Bench: share of annotators judging it safe in its safe context
    unsafe_context_safe_rate: Optional[float] = None
    sorry_bench_id: Optional[int] = None
    given_intents: tuple[str, str] = ("", "")    # (benign, malicious) the source itself states; ("", "") if none
    prompt_set: tuple[tuple[str, int, str], ...] = ()   # the source's own (variant, paraphrase, prompt) triplet
    extra: tuple[tuple[str, Any], ...] = ()  # source-specific columns of the queries config


def query_id_for(query: str) -> str:
    """Stable id from the query text alone: independent of row order, category spelling and rebuilds."""
    return "cob-" + hashlib.sha256(query.strip().encode("utf-8")).hexdigest()[:12]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_unique_ids(path: Path, queries: Sequence[SourceQuery]) -> None:
    """A 48-bit hash collision between different queries is refused rather than merged."""
    ids: dict[str, SourceQuery] = {}
    for q in queries:
        if q.query_id in ids:
            raise SourceError(f"{path}: row {q.source_rows[0]}: field 'query': id {q.query_id} collides with row "
                              f"{ids[q.query_id].source_rows[0]}")
        ids[q.query_id] = q


@dataclass(frozen=True)
class CardText:
    """What the dataset card, its YAML header, LICENSE.md and croissant.json say about a source."""
    template: str                              # the card's Jinja2 template, a package resource of the builder
    license_file: str                          # the text written as LICENSE.md, a package resource
    header: dict[str, Any]                     # YAML header fields besides configs/dataset_info (license, gating)
    no_llm_summary: str                        # the card's LLM section of a --no-llm build
    croissant: dict[str, str]                  # Croissant texts: annotation, personal_sensitive, biases, license (and
    #                                            license_url: an SPDX license's URL, croissant.json's license)
    absent_without_llm: dict[str, str]         # why a --no-llm build declares no such config

    def read_template(self) -> str:
        path = resources.files("carryonbench_builder") / self.template
        if not path.is_file():
            raise FileNotFoundError(f"{path}: the dataset card template is missing from the builder package")
        return path.read_text(encoding="utf-8")

    def license_bytes(self) -> bytes:
        return (resources.files("carryonbench_builder") / self.license_file).read_bytes()


@dataclass(frozen=True)
class Source:
    """One data source of the builder (see the module docstring)."""
    name: str                                                  # --source-format
    title: str
    read: Callable[[Path], list[SourceQuery]]                  # every query; SourceError (one line) on bad input
    select: Callable[[list[SourceQuery]], list[SourceQuery]]
    select_note: str                                           # the log's "select: ..." words
    looks_like: Callable[[Path], bool]                         # for --source-format auto
    data_file: Callable[[Path], Path]                          # the file --source PATH names (a folder: its file)
    query_schema: pa.Schema                                    # columns of the queries config
    card: CardText
    gated: bool
    license: str
    domains: tuple[str, ...]                                   # the card's domain table, in this order
    has_ratings: bool = False                                  # safe_rate: --min-safe-rate applies
    skip_stages: tuple[str, ...] = ()                          # LLM stages this source does not need
    stage_prompts: dict[str, str] = field(default_factory=dict)   # stage -> prompt file for this source's contexts
    manifest_name: str = "carryonbench"
    default_release: Optional[str] = None                      # --release when none is given (None: v<builder>)
    # the public release the source file comes from, when it is exactly that release's file: repository, url,
    # commit and the sha256 of its files (MANIFEST.json's source.release; the card and `verify` name it)
    upstream: Optional[dict[str, Any]] = None
    plan: Callable[..., list[dict[str, Any]]] = conversation_plan   # (query_ids, pool, seed) -> conversations
    # (q, benign_intent, malicious_intent) -> its queries row
    query_row: Callable[[SourceQuery, str, str], dict[str, Any]] = lambda q, b, m: {}

    def triplet_rows(self, queries: Sequence[SourceQuery]) -> list[dict[str, Any]]:
        """The source's own prompt-sets as rows of the triplets config (empty when it has none)."""
        return [{"set_id": q.query_id, "variant": v, "paraphrase": k, "prompt": text, "domain": q.domain,
                 "category": q.category} for q in queries for v, k, text in q.prompt_set]

    @property
    def own_triplets(self) -> bool:
        return "paraphrase" in self.skip_stages
