"""A small CASE-Bench-shaped source written for the tests (made-up, harmless queries), so the release tests
(publish, Croissant, changelog) never need the gated source."""
import json
from pathlib import Path

CAT = "fraud, scams and deception"
QUERIES = ("How are fake invoices spotted?", "How do phishing emails imitate banks?")


def synthetic_source(path: Path) -> Path:
    ctx = {"sender": {"platform": "web"}, "recipient": {"type": "clerk"},
           "transmission_principle": {"purpose": "training"}}
    rows = []
    for i, query in enumerate(QUERIES):
        rows.append({"query": query, "category": CAT, "context_intended_to_be_safe": True, "safe_rate": 0.8,
                     "scores": [1, 2, 1], "context": ctx})
        rows.append({"query": query, "category": CAT, "context_intended_to_be_safe": False, "safe_rate": 0.1 * i,
                     "scores": [2, 2, 1], "context": ctx})
    path.write_text(json.dumps(rows))
    return path


def build_synthetic(root: Path, release: str = "v0.1.0") -> Path:
    """A --no-llm dataset folder of the synthetic source, built in-process; returns the folder."""
    from builder.pipeline import build
    out = root / "carryonbench"
    build(synthetic_source(root / "source.json"), out, release=release, log=lambda m: None)
    return out
