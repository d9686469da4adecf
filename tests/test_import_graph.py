"""No import cycle inside carryon_eval/: the package's layers import downwards only.

Static, from the AST of every module of the package (nothing is imported): every ``import`` and
``from ... import`` statement counts, at module level and inside functions, classes and ``if TYPE_CHECKING:``
blocks alike. ``from .pkg import name`` is an edge to ``pkg`` and, when ``pkg.name`` is a module of the
package, to that module too. A package's ``__init__`` is the module named like the package.
"""
from __future__ import annotations

import ast

import pytest
from pathlib import Path

PACKAGE = "carryon_eval"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE


def module_names(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, modules: set[str], package: str = PACKAGE) -> set[str]:
    """The package's modules that module ``name`` (file ``path``) imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in modules:      # `import a.b.c` of a non-module attribute: its module
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package:
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source.split(".")[0] != package:
                continue
            add(source)
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    add(f"{source}.{alias.name}")
    return found


def import_graph() -> dict[str, set[str]]:
    names = module_names()
    return {name: imports_of(name, path, set(names)) for name, path in names.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:          # iterative would be longer; the package is far below the recursion limit
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert f"{PACKAGE}.cli" in graph and f"{PACKAGE}.api" in graph
    assert any(f"{PACKAGE}.schema" in deps for deps in graph.values())      # relative imports are resolved


def test_cycle_finder_finds_function_level_cycles(tmp_path):
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import x\n")
    (pkg / "c.py").write_text("import carryon_eval.a\n")
    (pkg / "d.py").write_text("from . import c\n")
    names = module_names(pkg, PACKAGE)
    graph = {n: imports_of(n, p, set(names)) for n, p in names.items()}
    assert cycles(graph) == [[f"{PACKAGE}.a", f"{PACKAGE}.c", f"{PACKAGE}.sub.b"]]


def test_no_import_cycle_inside_the_package():
    found = cycles(import_graph())
    assert not found, "import cycles inside carryon_eval/:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_import_cycle_inside_the_builder():
    """The builder's folder is builder/ (installed as carryonbench_builder; its modules import each other
    relatively): the file entries, the stage limits and the stage tally sit below the modules that share them."""
    root = ROOT.parent / "builder"
    names = module_names(root, "builder")
    graph = {n: imports_of(n, p, set(names), package="builder") for n, p in names.items()}
    assert "builder.limits" in graph["builder.stages"] and "builder.sources.record" in graph["builder.stages"]
    found = cycles(graph)
    assert not found, "import cycles inside builder/:\n" + "\n".join(" <-> ".join(c) for c in found)


# ---------------------------------------------------------------- stage folders import no wing
STAGES = ("model", "dataset", "run", "rollout", "judge", "metrics", "report", "app")
WINGS = f"{PACKAGE}.suites"


def wing_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Stage module -> the wing modules it imports."""
    stages = tuple(f"{PACKAGE}.{s}" for s in STAGES)
    return {m: sorted(d for d in deps if d == WINGS or d.startswith(WINGS + "."))
            for m, deps in graph.items() if m.startswith(stages) and any(d.startswith(WINGS) for d in deps)}


def test_the_wing_finder_sees_a_stage_that_imports_a_wing(tmp_path):
    pkg = tmp_path / PACKAGE
    for folder in ("report", "suites", "suites/x"):
        (pkg / folder).mkdir(parents=True, exist_ok=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "suites" / "x" / "record.py").write_text("")
    (pkg / "report" / "a.py").write_text("def f():\n    from carryon_eval.suites.x import record\n")
    names = module_names(pkg, PACKAGE)
    graph = {n: imports_of(n, p, set(names)) for n, p in names.items()}
    assert wing_imports(graph) == {f"{PACKAGE}.report.a": [f"{PACKAGE}.suites.x", f"{PACKAGE}.suites.x.record"]}


def test_no_stage_folder_imports_a_wing():
    found = wing_imports(import_graph())
    assert not found, "stage modules that import a wing:\n" + "\n".join(f"{m} -> {', '.join(d)}"
                                                                       for m, d in found.items())


# ---------------------------------------------------------------- the report folder draws no suite's figure
CONDITION_NAMES = {"turn1", "oracle", "bc", "nc", "mc"}


def conditions_named(path: Path) -> list[str]:
    """The string constants of a module that are a CarryOnBench condition or a column key of one ("bc.utility"),
    and the condition lists and moves it imports (schema's ``*CONDITION*`` names, anything of ``moves``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= {node.value} if node.value.split(".")[0] in CONDITION_NAMES else set()
        elif isinstance(node, ast.ImportFrom) and node.module in (f"{PACKAGE}.schema", f"{PACKAGE}.moves"):
            found |= {a.name for a in node.names if node.module.endswith("moves") or "CONDITION" in a.name}
    return sorted(found)


def test_conditions_named_sees_a_condition(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('from carryon_eval.schema import CONDITIONS, Transcript\nfrom carryon_eval.moves import MOVES\n'
                      'COLORS = {"bc": 1}\nSORT = "nc.harm"\nTEXT = "bc and nc"\n')
    assert conditions_named(module) == ["CONDITIONS", "MOVES", "bc", "nc.harm"]


def test_report_modules_name_no_condition():
    """A suite's figures, compare part and leaderboard part (labels, first sort, page sections) are its wing's."""
    found = {p.name: conditions_named(p) for p in sorted((ROOT / "report").glob("*.py"))}
    assert not any(found.values()), {name: names for name, names in found.items() if names}
