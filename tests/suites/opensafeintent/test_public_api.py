"""OpenSafeIntent's wing stands alone: what other wings use of it is its public API (``public``, and its suite
record's public hooks), never a private name; its and the triplet wing's hooks take the seam's typed inputs; and
``bench.extras`` is read and written through the wing's one accessor."""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from carryon_eval.suite import suites
from carryon_eval.suite.lazy import resolved
from carryon_eval.suites.opensafeintent import public
from carryon_eval.suites.opensafeintent.suite import inputs_of, inputs_or_none, keep_inputs

PACKAGE = Path(__file__).resolve().parents[3] / "carryon_eval"
WINGS = PACKAGE / "suites"
OSI = "carryon_eval.suites.opensafeintent"
ACCESSOR = WINGS / "opensafeintent" / "suite.py"


def imports_from(path: Path, prefix: str) -> list[tuple[str, str]]:
    """(module, name) of every ``from <prefix>... import name`` in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [(node.module, alias.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(prefix)
            for alias in node.names]


def other_wings_files() -> list[Path]:
    return [p for p in WINGS.rglob("*.py") if p.parent.name not in ("opensafeintent", "suites")]


def test_other_wings_import_only_its_public_api():
    seen = {}
    for path in other_wings_files():
        for module, name in imports_from(path, OSI):
            seen[(path.relative_to(PACKAGE).as_posix(), module, name)] = True
            assert not name.startswith("_"), f"{path}: imports the private name {name} of {module}"
            assert module == f"{OSI}.public", f"{path}: imports {name} from {module}; other wings use {OSI}.public"
    # the two wings that lean on it do so through the public API: the check above saw them
    assert {p for p, _, _ in seen} >= {"suites/triplet/hooks.py", "suites/carryonbench/judging/rubric.py"}


def test_modules_outside_the_wings_import_only_its_public_api():
    """No module outside suites/ imports OpenSafeIntent at all (the inspect-ai export asks the suite records for
    their parts); CarryOnBench's inspect scores read it through ``public``, as every other wing."""
    outside = [p for p in PACKAGE.rglob("*.py") if WINGS not in p.parents]
    found = {(p.relative_to(PACKAGE).as_posix(), m) for p in outside for m, _ in imports_from(p, OSI)}
    assert not found, found
    inside = {m for m, _ in imports_from(WINGS / "carryonbench" / "inspect_eval" / "scores.py", OSI)}
    assert inside == {f"{OSI}.public"}


def test_the_public_api_is_documented_and_exported():
    assert public.__doc__ and all(f"``{name}``" in public.__doc__ for name in public.__all__)
    assert all(hasattr(public, name) and not name.startswith("_") for name in public.__all__)


def test_no_private_name_anywhere_outside_the_wing_is_imported_from_it():
    for path in PACKAGE.rglob("*.py"):
        if OSI.replace(".", "/") in path.as_posix():
            continue
        bad = [(m, n) for m, n in imports_from(path, OSI) if n.startswith("_")]
        assert not bad, f"{path}: imports private names {bad}"


def test_the_wings_touch_bench_extras_only_through_the_accessor():
    for path in [*(WINGS / "opensafeintent").glob("*.py"), *(WINGS / "triplet").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        uses = [node.lineno for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and node.attr == "extras"
                or isinstance(node, ast.Constant) and node.value == "extras"]     # getattr(bench, "extras", ...)
        if path == ACCESSOR:        # the accessor's read and its one write
            assert len(uses) == 2, uses
        else:
            assert not uses, f"{path}: bench.extras at lines {uses}; use the wing's accessor (inputs_of ...)"


def test_the_accessor_reads_back_what_it_keeps_and_says_what_is_missing():
    bench = SimpleNamespace(extras={})
    assert inputs_or_none(bench) is None and inputs_or_none(None) is None
    with pytest.raises(KeyError, match="--opensafeintent DIR"):
        inputs_of(bench, "triplet")
    loaded = public.Inputs(release=None, generation=None)   # type: ignore[arg-type]
    keep_inputs(bench, loaded, "triplet")
    assert inputs_of(bench, "triplet") is loaded and inputs_or_none(bench) is None
    bench.extras["opensafeintent"] = "not the wing's record"
    assert inputs_or_none(bench) is None


def hooks(suite) -> dict[str, object]:
    """The suite's hooks, each the function itself (a hook its record names where it lives, imported)."""
    report = suite.report
    found = {"plan": suite.plan, "missing": suite.missing, "load": suite.load,
             **{f"probe {p.name} up_to": p.up_to for p in suite.probes},
             **{f"probe {p.name}": p.run for p in suite.probes},
             **{f"use {u.scorer}": u.when for u in suite.uses if u.when is not None}}
    for name in ("summarize", "blocks", "compare", "compare_blocks", "export"):
        if getattr(report, name) is not None:
            found[f"report {name}"] = getattr(report, name)
    return {name: resolved(fn) for name, fn in found.items()}


@pytest.mark.parametrize("name", ["opensafeintent", "triplet"])
def test_the_wings_hooks_take_the_seams_typed_inputs(name):
    suite = next(s for s in suites() if s.name == name)
    found = hooks(suite)
    assert {"plan", "missing", "load", "probe intent_probe", "report summarize"} <= set(found)
    for hook, fn in found.items():
        annotations = getattr(fn, "__annotations__", {})
        assert annotations, f"{name}: hook {hook} is not annotated"
        loose = {k: v for k, v in annotations.items() if "Any" in str(v) and "dict[str, Any]" not in str(v)}
        assert not loose, f"{name}: hook {hook} takes Any: {loose}"
