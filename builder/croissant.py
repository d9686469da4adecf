"""`croissant.json`: the dataset folder described in Croissant 1.0 with the Responsible AI (RAI) fields.

Everything is read from the card the build just rendered, so the two never disagree: the configs, their files
and their features from the card's YAML header (`configs`, `dataset_info`), each field's description from the
card's field tables (`### \\`config\\`` sections), and the RAI texts from the card's sections (construction,
access and gating, intended use, limitations), plus the sha256 and size of every Parquet file in the folder.
Deterministic: fixed key order, no timestamps (byte-identical rebuilds hold).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from .changelog import release_notes
from .citation import DATASET_AUTHOR, HUB_ENDPOINT, paper_bibtex
from .files import file_entry

CROISSANT_FILE = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
# The Croissant 1.0 JSON-LD context (as the spec and mlcroissant write it).
CONTEXT: dict[str, Any] = {
    "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/", "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract", "field": "cr:field",
    "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject", "fileSet": "cr:fileSet", "format": "cr:format",
    "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path", "recordSet": "cr:recordSet",
    "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated", "replace": "cr:replace",
    "samplingRate": "cr:samplingRate", "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}
_DATA_TYPES = {"string": "sc:Text", "float64": "sc:Float", "int64": "sc:Integer"}
_SEMVER = re.compile(r"^(?:[a-z][a-z0-9]*-)?v?(\d+\.\d+\.\d+)$")     # v0.1.0, open-v1.0.0 (a release line)

def card_sections(markdown: str) -> dict[str, str]:
    """The card body's `## Title` sections (title -> text, stripped)."""
    sections: dict[str, str] = {}
    title = None
    for line in markdown.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            sections[title] = ""
        elif title is not None:
            sections[title] += line + "\n"
    return {t: s.strip() for t, s in sections.items()}


def field_descriptions(markdown: str) -> dict[str, dict[str, str]]:
    """config -> field -> description, from the card's `### \\`config\\`` field tables."""
    out: dict[str, dict[str, str]] = {}
    config = None
    for line in markdown.splitlines():
        heading = re.match(r"^### `([a-z_]+)`", line)
        if heading:
            config = heading.group(1)
            out[config] = {}
        elif line.startswith("#"):
            config = None
        elif config and line.startswith("| ") and not line.startswith("| field |"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if len(cells) >= 3:
                out[config][cells[0]] = " | ".join(cells[2:])
    return out


def split_card(card: str) -> tuple[dict[str, Any], str]:
    """(YAML header, markdown body) of a rendered card."""
    _, header, body = card.split("---\n", 2)
    return yaml.safe_load(header), body


def _field(config: str, feature: dict[str, Any], description: str, file_id: str) -> dict[str, Any]:
    dtype = feature.get("dtype") or feature.get("list")
    out: dict[str, Any] = {"@type": "cr:Field", "@id": f"{config}/{feature['name']}", "name": feature["name"],
                           "description": description, "dataType": _DATA_TYPES[dtype]}
    if "list" in feature:
        out["repeated"] = True
    out["source"] = {"fileObject": {"@id": file_id}, "extract": {"column": feature["name"]}}
    return out


def croissant(folder: Path, card: str, manifest: dict[str, Any], texts: dict[str, str]) -> dict[str, Any]:
    """The Croissant document of a dataset folder whose Parquet files are written and whose card is `card`;
    ``texts``: the source's RAI texts the card does not hold in a section of its own (Source.card.croissant:
    license, annotation, personal_sensitive, biases)."""
    header, body = split_card(card)
    sections = card_sections(body)
    fields = field_descriptions(body)
    features = {c["config_name"]: c["features"] for c in header.get("dataset_info", [])}
    distribution, record_sets = [], []
    for config in header["configs"]:
        name = config["config_name"]
        path = config["data_files"][0]["path"]
        entry = file_entry(Path(folder) / path)
        distribution.append({"@type": "cr:FileObject", "@id": path, "name": path, "contentUrl": path,
                             "encodingFormat": "application/x-parquet", "contentSize": f"{entry['size']} B",
                             "sha256": entry["sha256"]})
        missing = [f["name"] for f in features[name] if f["name"] not in fields.get(name, {})]
        if missing:
            raise ValueError(f"dataset card: the {name} field table does not describe {', '.join(missing)}")
        record_sets.append({"@type": "cr:RecordSet", "@id": name, "name": name,
                            "description": f"The {name} config (split test), as documented in the card.",
                            "field": [_field(name, f, fields[name][f["name"]], path) for f in features[name]]})
    release = str(manifest.get("release", ""))
    version = _SEMVER.match(release)
    published = release_notes(release).get("date")
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": str(manifest.get("name", "carryonbench")),
        "alternateName": header.get("pretty_name", "CarryOnBench"),
        "description": body.strip().split("\n## ", 1)[0].split("\n", 1)[-1].strip(),   # the card's lead
        "version": version.group(1) if version else str(manifest.get("builder_version")),
        **({"datePublished": published} if published else {}),
        **_license(header, texts),
        # the Hub repository the publish step targets, when the build was told it (carryon-build build --hub-repo)
        **({"url": f"{HUB_ENDPOINT}/datasets/{manifest['hub_repo']}"} if manifest.get("hub_repo") else {}),
        "creator": {"@type": "sc:Organization", "name": DATASET_AUTHOR},
        "citeAs": paper_bibtex(),
        "keywords": header.get("tags", []),
        "inLanguage": (header.get("language") or ["en"])[0],
        "isAccessibleForFree": True,
        **({"conditionsOfAccess": header["extra_gated_prompt"]} if header.get("extra_gated_prompt") else {}),
        "rai:dataCollection": sections.get("Construction", ""),
        "rai:dataAnnotationProtocol": texts["annotation"],
        "rai:dataBiases": texts["biases"],
        "rai:dataLimitations": sections.get("Limitations", ""),
        "rai:personalSensitiveInformation": texts["personal_sensitive"],
        "rai:dataUseCases": "\n\n".join(f"{title}:\n{sections[title]}" for title in ("Intended use", "Out-of-scope use")
                                          if sections.get(title)),
        "rai:dataSocialImpact": sections.get("Access and gating", ""),
        "distribution": distribution,
        "recordSet": record_sets,
    }


def _license(header: dict[str, Any], texts: dict[str, str]) -> dict[str, str]:
    """The card's license: a custom one by its id, name and terms ("other: NAME (...)"); an SPDX one by its URL
    (Croissant recommends a known license's URL), its attribution as ``creditText``."""
    if header.get("license_name"):
        return {"license": f"{header.get('license')}: {header['license_name']} ({texts['license']})"}
    if texts.get("license_url"):
        return {"license": texts["license_url"], "creditText": texts["license"]}
    return {"license": f"{header.get('license')} ({texts['license']})"}


def croissant_json(folder: Path, card: str, manifest: dict[str, Any], texts: dict[str, str]) -> str:
    return json.dumps(croissant(folder, card, manifest, texts), indent=2, ensure_ascii=False) + "\n"
