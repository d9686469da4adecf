"""What a paper cites: the CarryOnBench paper and a dataset release, as BibTeX (one source for the card's
citation block, `carryon-build publish` and croissant.json; CITATION.cff at the repository root says the same,
and tests/builder/test_publish.py checks that they agree)."""
from __future__ import annotations

from typing import Optional

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
