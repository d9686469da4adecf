"""No import cycle inside carryon_eval/: the package's layers import downwards only, module by module and folder
by folder (a wing counts as a folder); and the stage folders speak no suite: they import no wing, name no
CarryOnBench condition, scorer or metric, and look no suite up by the hooks it has.

Static, from the AST of every module of the package (nothing is imported): every ``import`` and
``from ... import`` statement counts, at module level and inside functions, classes and ``if TYPE_CHECKING:``
blocks alike. ``from .pkg import name`` is an edge to ``pkg`` and, when ``pkg.name`` is a module of the
package, to that module too. A package's ``__init__`` is the module named like the package.
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator, Optional, Sequence


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
STAGES = ("model", "dataset", "run", "rollout", "judge", "metrics", "report", "app", "inspect_bridge")
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
    and the condition lists and moves it imports (``*CONDITION*`` names of the wing's ``conditions`` or of
    schema, anything of ``moves``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= {node.value} if node.value.split(".")[0] in CONDITION_NAMES else set()
        elif isinstance(node, ast.ImportFrom) and node.module in (f"{PACKAGE}.schema", f"{PACKAGE}.moves",
                                                                  f"{PACKAGE}.suites.carryonbench.conditions"):
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


# ---------------------------------------------------------------- no folder imports another in a circle
def folder_of(module: str) -> str:
    """The folder a module belongs to: a wing (``carryon_eval.suites.<wing>``, its subpackages included) or a
    first-level folder (``carryon_eval.judge``); a top-level module (``carryon_eval.cli``) is its own."""
    parts = module.split(".")
    if len(parts) <= 2:
        return module
    return ".".join(parts[:3] if parts[1] == "suites" else parts[:2])


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Folder -> the folders its modules import."""
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        mine = folder_of(module)
        out.setdefault(mine, set()).update(f for f in map(folder_of, deps) if f != mine)
    return out


def test_the_folder_graph_sees_a_wing_and_a_folder_that_import_each_other():
    """CarryOnBench's human validation was a first-level folder that imported the wing, which imported it back
    (no module cycle, a folder loop): the folder graph sees that shape."""
    graph = {f"{PACKAGE}.human.people": {f"{PACKAGE}.suites.carryonbench.fidelity"},
             f"{PACKAGE}.suites.carryonbench.report": {f"{PACKAGE}.human.people"},
             f"{PACKAGE}.suites.carryonbench.fidelity": set()}
    assert not cycles(graph)
    assert cycles(folder_graph(graph)) == [[f"{PACKAGE}.human", f"{PACKAGE}.suites.carryonbench"]]


def test_no_folder_imports_another_in_a_circle():
    """Folders (and wings) import each other downwards only: human validation sits in CarryOnBench's wing."""
    found = cycles(folder_graph(import_graph()))
    assert not found, "folders that import each other:\n" + "\n".join(" <-> ".join(c) for c in found)
    assert not (ROOT / "human").exists() and (ROOT / "suites" / "carryonbench" / "human" / "__init__.py").exists()


# ---------------------------------------------------------------- the house speaks no CarryOnBench
#: CarryOnBench's scorer and metric names (issue 40's acceptance): none is an identifier or a string constant of a
#: module outside the wings (every folder and root module of the package but suites/), whole or as a `_` / `-` /
#: `.`-separated run of tokens (``load_utility``, ``"utility.jsonl"``, ``"--utility-group-size"``);
#: case-insensitive; CamelCase is not split.
CARRYONBENCH_NAMES = ("utility", "safety", "rubric_utility", "benutil", "ben_util", "rubric", "harm", "recovery",
                      "harm5_rate", "violation_rate", "harm_mean_turns", "utility_delta", "clarification_effect",
                      "grouped", "calibrate", "redundancy")
#: The stage folders that take no suite by what it has (the lookup guard below).
NAME_STAGES = ("app", "judge", "run", "report", "suite")
#: The one module that knows CarryOnBench's section is results.json's top level: results.json's serializer.
SERIALIZER = "carryon_eval/run/results.py"
_TOKENS = re.compile(r"[_\-.]")


def _tokens(text: str) -> list[str]:
    return _TOKENS.split(text.lower())


def _names_in(text: str, names: Sequence[str] = CARRYONBENCH_NAMES) -> list[str]:
    """The names ``text`` is, or holds as a run of its tokens."""
    tokens = _tokens(text)
    found = []
    for name in names:
        want = _tokens(name)
        if text.lower() == name or any(tokens[i:i + len(want)] == want for i in range(len(tokens) - len(want) + 1)):
            found.append(name)
    return found


def _identifiers(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, text) of every identifier and string constant of a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, ast.keyword) and node.arg is not None:
            yield node.lineno, node.arg
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def carryonbench_names(source: str, filename: str = "<source>") -> list[tuple[int, str, str]]:
    """(line, identifier or string, the CarryOnBench name it holds) of a module's source, in order."""
    tree = ast.parse(source, filename=filename)
    return sorted({(line, text, name) for line, text in _identifiers(tree) for name in _names_in(text)})


def house_name_offenders(root: Path = ROOT) -> dict[str, list[tuple[int, str, str]]]:
    """Module outside the wings (path from the repository) -> its CarryOnBench names; the serializer is left out."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel.startswith(f"{root.name}/suites/") or rel == SERIALIZER:
            continue
        found = carryonbench_names(path.read_text(encoding="utf-8"), rel)
        if found:
            out[rel] = found
    return out


def test_the_house_finder_reads_root_modules_and_every_folder_but_the_wings(tmp_path):
    pkg = tmp_path / PACKAGE
    for folder in ("inspect_bridge", "dataset", "suites/x"):
        (pkg / folder).mkdir(parents=True, exist_ok=True)
    (pkg / "defaults.py").write_text("UTILITY_GROUP_SIZE = 25\n")
    (pkg / "inspect_bridge" / "export.py").write_text("def f(harm_score):\n    return harm_score\n")
    (pkg / "dataset" / "load.py").write_text("QUERIES = 'queries'\n")
    (pkg / "suites" / "x" / "record.py").write_text("UTILITY = 'utility'\n")
    found = house_name_offenders(pkg)
    assert found == {f"{PACKAGE}/defaults.py": [(1, "UTILITY_GROUP_SIZE", "utility")],
                     f"{PACKAGE}/inspect_bridge/export.py": [(1, "harm_score", "harm"), (2, "harm_score", "harm")]}


def test_the_name_finder_sees_a_planted_name():
    source = textwrap.dedent('''
        """The utility of prose is not a name."""
        from carryon_eval.judge.store import load_utility
        UTILITY_FILE = "utility.jsonl"

        class Phase:
            def run(self, grouped: bool, **kw):
                return f(safety_score=kw, flag="--utility-group-size", key="summary.harm5_rate")

        def rubric():
            return self.recovery, "benign", "Harmonic", "ungrouped", "calibration"
    ''')
    found = {(line, text, name) for line, text, name in carryonbench_names(source)}
    assert found == {(4, "UTILITY_FILE", "utility"), (4, "utility.jsonl", "utility"),
                     (7, "grouped", "grouped"), (8, "safety_score", "safety"),
                     (8, "--utility-group-size", "utility"), (8, "summary.harm5_rate", "harm5_rate"),
                     (10, "rubric", "rubric"), (11, "recovery", "recovery")}
    assert _names_in("load_rubric_utility") == ["utility", "rubric_utility", "rubric"]
    assert _names_in("harm_mean_turns") == ["harm", "harm_mean_turns"]


def test_no_module_outside_the_wings_names_a_carryonbench_scorer_or_metric():
    """Every folder and root module outside suites/ (the stage folders, inspect_bridge/, the root modules): none
    holds a CarryOnBench name; what is CarryOnBench's own (e.g. its inspect-ai task and scores) lives in its wing."""
    found = house_name_offenders()
    assert not found, (f"CarryOnBench names outside the wings (beyond {SERIALIZER}):\n" +
                       "\n".join(f"{rel}:{line}:{text} ({name})" for rel, names in found.items()
                                  for line, text, name in names))


# ---------------------------------------------------------------- no stage looks a suite up by what it has
LOOKUP_STAGES = NAME_STAGES


def _targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _root_name(node: ast.AST) -> Optional[str]:
    """``s`` of ``s.report.write`` (an attribute chain on a name)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _tests_presence(test: ast.AST, targets: set[str]) -> bool:
    """Does a condition ask whether a loop variable has something: ``s.x is not None``, ``hasattr(s, ...)``,
    ``getattr(s, ..., None)``, ``callable(s.x)`` (alone or in an ``and`` / ``or``)?"""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.IsNot) \
                and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None \
                and isinstance(node.left, ast.Attribute) and _root_name(node.left) in targets:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args \
                and node.func.id in ("hasattr", "getattr", "callable") and _root_name(node.args[0]) in targets \
                and (node.func.id != "getattr" or len(node.args) == 3):
            return True
    return False


def _is_lookup(comp: ast.AST) -> bool:
    return isinstance(comp, (ast.GeneratorExp, ast.ListComp)) and any(
        _tests_presence(cond, _targets(gen.target)) for gen in comp.generators for cond in gen.ifs)


def presence_lookups(source: str, filename: str = "<source>") -> list[int]:
    """Lines where a module takes the first of a collection by what its members have: ``next(s for s in ... if
    s.<hook> is not None)``, ``[... if hasattr(s, ...)][0]``, or a ``for s in ...:`` whose ``if`` on what ``s``
    has returns or breaks."""
    lines = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "next" and node.args \
                and _is_lookup(node.args[0]):
            lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _is_lookup(node.value):
            lines.append(node.lineno)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            targets = _targets(node.target)
            for inner in node.body:
                if isinstance(inner, ast.If) and _tests_presence(inner.test, targets) and any(
                        isinstance(n, (ast.Return, ast.Break)) for n in ast.walk(inner)):
                    lines.append(inner.lineno)
    return sorted(lines)


def stage_lookups(root: Path = ROOT) -> dict[str, list[int]]:
    out = {}
    for stage in LOOKUP_STAGES:
        for path in sorted((root / stage).rglob("*.py")):
            rel = path.relative_to(root.parent).as_posix()
            found = presence_lookups(path.read_text(encoding="utf-8"), rel)
            if found:
                out[rel] = found
    return out


def test_the_lookup_finder_sees_a_planted_lookup():
    source = textwrap.dedent('''
        def writer(every):
            return next((s.report.write for s in every if s.report is not None and s.report.write is not None), None)

        def table():
            return [s for s in suites() if hasattr(s.report, "table")][0]

        def units():
            for s in suites():
                if getattr(s, "units", None):
                    return s.units

        def fine(name, made):
            kept = next(s for s in made if s.name == name)
            every = [s.report.export for s in suites() if s.report.export is not None]    # all of them: no lookup
            first = next((o.flag for o in options if o.path), None)                        # a value, not a presence
            return kept, every, first
    ''')
    assert presence_lookups(source) == [3, 6, 10]


def test_the_lookup_finder_sees_todays_instances():
    """The lookups issue 40 names (report/phase.py, compare.py, leaderboard.py), as they were at its start."""
    today = {"phase.py": "    writer = next((s.report.write for s in every if s.report is not None and "
                         "s.report.write is not None), None)\n",
             "compare.py": "    table = next((s.report.table for s in suites() if s.report is not None and "
                           "s.report.table is not None), None)\n",
             "leaderboard.py": "    rule = next((s.report.units for s in suites() if s.report is not None and "
                               "s.report.units is not None), None)\n"}
    assert {name: presence_lookups("def f():\n" + line) for name, line in today.items()} == \
        {name: [2] for name in today}


def test_no_stage_module_looks_a_suite_up_by_what_it_has():
    found = stage_lookups()
    assert not found, "stage modules that take the first suite having a hook (iterate the suites instead):\n" + \
        "\n".join(f"{rel}:{line}" for rel, lines in found.items() for line in lines)


# ---------------------------------------------------------------- importing a command imports no wing
ENTRY_MODULES = (f"{PACKAGE}.cli", f"{PACKAGE}.api", f"{PACKAGE}.sweep", f"{PACKAGE}.app.commands")


def test_importing_the_commands_imports_no_wing():
    """The CLI, the Python API and the application layer find the wings when a command line is read or a suite
    is first asked for (carryon_eval.suite.suites()), never on import: the suites' options, `export --format`,
    `annotate --task`, `agreement --task` and `sweep --help`'s plan keys are made late."""
    code = (f"import json, sys\nimport {', '.join(ENTRY_MODULES)}\nfrom {PACKAGE}.suite import registry\n"
            f"print(json.dumps([sorted(m for m in sys.modules if m.startswith('{WINGS}')), registry._loaded]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=ROOT.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    wings, discovered = json.loads(proc.stdout.strip().splitlines()[-1])
    assert wings == [] and discovered is False, f"importing {ENTRY_MODULES} imported {wings}"


def test_the_late_options_are_there_when_the_command_line_is_read():
    from click.testing import CliRunner

    from carryon_eval.cli import cli

    runner = CliRunner()
    assert "--opensafeintent DIR" in runner.invoke(cli, ["--help"]).output
    assert "[utility|safety|fidelity]" in runner.invoke(cli, ["annotate", "--help"]).output
    assert "[utility|safety|fidelity]" in runner.invoke(cli, ["agreement", "--help"]).output
    assert "--format [opensafeintent|inspect" in runner.invoke(cli, ["export", "--help"]).output
    assert "opensafeintent-sets" in runner.invoke(cli, ["sweep", "--help"]).output
