"""`carryon-eval agreement A B` on two files of Ben-Util verdicts: the keys both sides hold are compared, an unscored
side is excluded and counted, and `--json` writes the record (VerdictAgreement) the lines are read from."""
from __future__ import annotations

import json
from pathlib import Path

from support.eval_cli import invoke

A = [("c1", "i1", "yes"), ("c1", "i2", "no"), ("c2", "i1", "yes"), ("c3", "i1", "yes")]
B = [("c1", "i1", "yes"), ("c1", "i2", "yes"), ("c2", "i1", ""), ("c4", "i1", "no")]


def _labels(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(json.dumps({"conversation_id": c, "turn": 1, "item_id": i, "verdict": v}) + "\n"
                            for c, i, v in rows), encoding="utf-8")
    return path


def test_two_label_files_compare_by_key_in_json_and_lines(tmp_path):
    a, b = _labels(tmp_path / "a.jsonl", A), _labels(tmp_path / "b.jsonl", B)
    res = invoke("agreement", a, b, "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert list(got) == ["n_a", "n_b", "n_common", "n_compared", "n_unscored_excluded", "only_in_a", "only_in_b",
                         "percent_agreement", "cohen_kappa", "kappa_reason", "confusion"]
    assert (got["n_a"], got["n_b"], got["n_common"], got["n_compared"], got["n_unscored_excluded"]) == (4, 4, 3, 2, 1)
    assert (got["only_in_a"], got["only_in_b"], got["percent_agreement"]) == (1, 1, 50.0)
    assert got["confusion"] == {"yes_yes": 1, "yes_no": 0, "no_yes": 1, "no_no": 0}
    text = invoke("agreement", a, b)
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[0] == "compared 2 verdicts (1 excluded as unscored; 1 only in A, 1 only in B)"
    assert lines[1] == "percent agreement: 50.0%"
    assert lines[3] == "A yes/B yes 1, A yes/B no 0, A no/B yes 1, A no/B no 0" and len(lines) == 4
