"""What a paper cites: the CarryOnBench paper and a dataset release, as BibTeX (one source for the card's
citation block, `carryon-build publish` and croissant.json; CITATION.cff at the repository root says the same,
and tests/builder/test_publish.py checks that they agree)."""
from __future__ import annotations

from typing import Any, Optional

DATASET_TITLE = "CarryOnBench"
DATASET_AUTHOR = "CarryOnBench contributors"
PAPER_TITLE = ("Useless but Safe? Benchmarking Utility Recovery with User Intent Clarification in Multi-Turn "
               "Conversations")
# (family name, given names), in the paper's order
PAPER_AUTHORS = (("Zheng", "Mingqian"), ("Morgan", "Malia"), ("Jiang", "Liwei"), ("Rose", "Carolyn"),
                 ("Sap", "Maarten"))
PAPER_ARXIV = "2604.27093"
PAPER_YEAR = 2026
HUB_ENDPOINT = "https://huggingface.co"


def paper_bibtex() -> str:
    authors = " and ".join(f"{family}, {given}" for family, given in PAPER_AUTHORS)
    return ("@article{zheng2026carryonbench,\n"
            f"  title   = {{{PAPER_TITLE}}},\n"
            f"  author  = {{{authors}}},\n"
            f"  journal = {{arXiv preprint arXiv:{PAPER_ARXIV}}},\n"
            f"  year    = {{{PAPER_YEAR}}}\n"
            "}")


def release_url(repo_id: str, revision: str, endpoint: str = HUB_ENDPOINT) -> str:
    return f"{endpoint.rstrip('/')}/datasets/{repo_id}/tree/{revision}"


def release_bibtex(release: str, *, repo_id: str = "ORG/carryonbench", commit: Optional[str] = None,
                   endpoint: str = HUB_ENDPOINT, note: Optional[str] = None) -> str:
    """The dataset release as a BibTeX @misc entry: the Hub revision (tag) and, once published, its commit."""
    key = "carryonbench_dataset_" + "".join(c for c in release if c.isalnum())
    where = f"Hugging Face dataset {repo_id}, revision {release}"
    if commit:
        where += f" (commit {commit})"
    lines = [f"@misc{{{key},",
             f"  title        = {{{DATASET_TITLE} dataset, release {release}}},",
             f"  author       = {{{{{DATASET_AUTHOR}}}}},",
             f"  year         = {{{PAPER_YEAR}}},",
             f"  howpublished = {{{where}}},",
             f"  url          = {{{release_url(repo_id, release, endpoint)}}}"]
    if note:
        lines[-1] += ","
        lines.append(f"  note         = {{{note}}}")
    return "\n".join(lines + ["}"])


CITATION_FILE = "CITATION.cff"
PAPER_DOI_NOTE = f"arXiv:{PAPER_ARXIV}"


def paper_cff() -> dict[str, Any]:
    """The paper as a CFF reference (the root CITATION.cff's and every build's ``preferred-citation``)."""
    return {"type": "article", "title": PAPER_TITLE,
            "authors": [{"family-names": family, "given-names": given} for family, given in PAPER_AUTHORS],
            "journal": f"arXiv preprint arXiv:{PAPER_ARXIV}", "year": PAPER_YEAR,
            "identifiers": [{"type": "other", "value": PAPER_DOI_NOTE,
                             "description": "The arXiv identifier of the paper"}]}


def cff_title(what: str) -> str:
    """A CFF title that names the paper: cffconvert (2.0) writes BibTeX, APA, ... from the root fields only and
    ignores ``preferred-citation``, so the root's own title carries the paper's."""
    return f"{what}, the benchmark of \"{PAPER_TITLE}\" ({PAPER_AUTHORS[0][0]} et al., {PAPER_YEAR}, {PAPER_DOI_NOTE})"


def dataset_cff(name: str, release: str, *, license_id: Optional[str], keywords: list[str],
                date: Optional[str] = None, repo_id: Optional[str] = None,
                source: Optional[dict[str, Any]] = None) -> str:
    """A built folder's CITATION.cff (CFF 1.2.0, type dataset): this release, the paper as its preferred citation
    and, for a source with a public release (``source``: repository, url, commit), that release as a reference."""
    import yaml

    doc: dict[str, Any] = {
        "cff-version": "1.2.0",
        "message": (f"If you use this dataset, please cite the paper (preferred-citation) and name the release "
                    f"({release}) you evaluated on."),
        "type": "dataset",
        "title": cff_title(f"{DATASET_TITLE} dataset {name}, release {release}"),
        "version": release,
        **({"date-released": date} if date else {}),
        "authors": [{"name": DATASET_AUTHOR}],
        **({"license": license_id} if license_id else {}),
        **({"url": release_url(repo_id, release)} if repo_id else {}),
        "keywords": list(keywords),
        "preferred-citation": paper_cff(),
    }
    if source:
        doc["references"] = [{"type": "data", "title": source["repository"].split("/")[-1],
                              "authors": [{"name": f"{source['repository'].split('/')[0]} et al."}],
                              "repository-code": source["url"], "commit": source["commit"],
                              **({"license": license_id} if license_id else {})}]
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
