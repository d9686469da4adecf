"""`carryon-eval agreement A B`: how far two sets of Ben-Util verdicts agree.

A and B are each either a run folder (its utility_judgments.jsonl) or a JSONL/CSV file of labels,
e.g. from human annotators, with the columns conversation_id, turn, item_id and verdict
(yes/no, true/false, 1/0; empty = unscored). Verdicts are compared per (conversation_id, turn,
item_id) present in both; a pair where either side is unscored is excluded and counted.
Reports percent agreement and Cohen's kappa.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Optional

import click

from .judge import UTILITY_FILE
from .stats import cohen_kappa, percent_agreement

KEYS = ("conversation_id", "turn", "item_id")
Key = tuple[str, int, str]
_TRUE = {"yes", "y", "true", "1", "fulfilled"}
_FALSE = {"no", "n", "false", "0", "unfulfilled"}
_NONE = {"", "none", "null", "unscored", "na", "n/a"}


class AgreementError(click.ClickException):
    exit_code = 2


def parse_verdict(value: Any, where: str) -> Optional[bool]:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text in _NONE:
        return None
    raise AgreementError(f"{where}: verdict {value!r} is not yes/no (or empty for unscored)")


def load_labels(source: Path) -> dict[Key, Optional[bool]]:
    """{(conversation_id, turn, item_id): verdict} from a run folder, a .jsonl or a .csv file."""
    source = Path(source)
    path = source / UTILITY_FILE if source.is_dir() else source
    if not path.is_file():
        raise AgreementError(f"{source}: no {UTILITY_FILE} in this folder" if source.is_dir() else f"{source}: not found")
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    else:
        rows = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    raise AgreementError(f"{path}:{n}: not a JSON line") from None
    labels: dict[Key, Optional[bool]] = {}
    for n, row in enumerate(rows, start=1):
        missing = [k for k in (*KEYS, "verdict") if k not in row]
        if missing:
            raise AgreementError(f"{path}: row {n} lacks {missing}; expected columns {list(KEYS) + ['verdict']}")
        try:
            key = (str(row["conversation_id"]), int(row["turn"]), str(row["item_id"]))
        except (TypeError, ValueError):
            raise AgreementError(f"{path}: row {n}: turn {row['turn']!r} is not a whole number") from None
        labels[key] = parse_verdict(row["verdict"], f"{path}: row {n}")   # a later row wins
    return labels


def agreement(a: dict[Key, Optional[bool]], b: dict[Key, Optional[bool]]) -> dict[str, Any]:
    common = sorted(set(a) & set(b))
    both = [k for k in common if a[k] is not None and b[k] is not None]
    va, vb = [a[k] for k in both], [b[k] for k in both]
    kappa, reason = cohen_kappa(va, vb)
    return {
        "n_a": len(a), "n_b": len(b), "n_common": len(common), "n_compared": len(both),
        "n_unscored_excluded": len(common) - len(both),
        "only_in_a": len(set(a) - set(b)), "only_in_b": len(set(b) - set(a)),
        "percent_agreement": percent_agreement(va, vb), "cohen_kappa": kappa, "kappa_reason": reason,
        "confusion": {"yes_yes": sum(x and y for x, y in zip(va, vb)),
                      "yes_no": sum(x and not y for x, y in zip(va, vb)),
                      "no_yes": sum(not x and y for x, y in zip(va, vb)),
                      "no_no": sum(not x and not y for x, y in zip(va, vb))},
    }


@click.command("agreement")
@click.argument("a", type=click.Path(exists=True, path_type=Path))
@click.argument("b", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
def agreement_command(a: Path, b: Path, as_json: bool) -> None:
    """Percent agreement and Cohen's kappa of the Ben-Util verdicts of A and B (run folders or label files)."""
    res = agreement(load_labels(a), load_labels(b))
    if as_json:
        click.echo(json.dumps(res, indent=2))
        return
    if not res["n_compared"]:
        raise AgreementError(f"no (conversation_id, turn, item_id) is scored in both {a} and {b} "
                             f"({res['n_common']} shared keys, {res['n_unscored_excluded']} with an unscored side)")
    kappa = "undefined (" + res["kappa_reason"] + ")" if res["cohen_kappa"] is None else f"{res['cohen_kappa']:.3f}"
    c = res["confusion"]
    click.echo(f"compared {res['n_compared']} verdicts ({res['n_unscored_excluded']} excluded as unscored; "
               f"{res['only_in_a']} only in A, {res['only_in_b']} only in B)")
    click.echo(f"percent agreement: {res['percent_agreement']:.1f}%")
    click.echo(f"Cohen's kappa:     {kappa}")
    click.echo(f"A yes/B yes {c['yes_yes']}, A yes/B no {c['yes_no']}, A no/B yes {c['no_yes']}, A no/B no {c['no_no']}")
