"""A wing's record as data (carryon_eval.suite.declared): a suite.toml read into its Suite record without importing
the wing; a file that is not one is refused with one line naming the file and the key."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from carryon_eval.dataset.configs import columns_of
from carryon_eval.run.folder import RunFile
from carryon_eval.suite import SuiteError, SuiteOptions, suite_of
from carryon_eval.suite.declared import DECLARATION, Needs, read_declaration
from carryon_eval.suite.lazy import Hook

WING = "tests_declared_wing_hooks"        # a hooks module no one can import: reading the record imports nothing

DECLARED = f'''
name = "declared"
conditions = ["declared_a", "declared_b"]
default = false
rank = 42
hooks = "{WING}"
plan = "plan"
load = "load"
needs = ["declared_dir"]
needs_rows = ["triplets"]

[[configs]]
name = "declared_config"
columns = ["id", "text"]

[[options]]
flag = "--declared-dir"
metavar = "DIR"
path = true
help = "its folder"

[[uses]]
scorer = "declared_judge"
when = "other.module:is_long"

[[files]]
name = "declared_probe.jsonl"
holds = "its probe's records"

[report]
section = "declared"
record = "{WING}.section:DeclaredSection"
summarize = "summarize"

[report.inspect]
metadata = "inspect_metadata"
'''


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / DECLARATION
    path.write_text(text)
    return path


def test_a_declaration_reads_into_its_suite_record_and_imports_nothing(tmp_path):
    suite = read_declaration(write(tmp_path, DECLARED))
    assert (suite.name, suite.conditions, suite.default, suite.rank) == ("declared", ("declared_a", "declared_b"),
                                                                         False, 42)
    assert suite.plan == Hook(WING, "plan")
    assert suite.uses[0].scorer == "declared_judge" and suite.uses[0].when == Hook("other.module", "is_long")
    assert [(o.flag, o.metavar, o.path) for o in suite.options] == [("--declared-dir", "DIR", True)]
    assert suite.files == (RunFile("declared_probe.jsonl", "its probe's records"),)
    assert suite.report.record == Hook(f"{WING}.section", "DeclaredSection")
    assert suite.report.inspect.metadata == Hook(WING, "inspect_metadata")
    assert suite.load == Needs(Hook(WING, "load"), ("declared_dir",), ("triplets",))
    assert columns_of("declared_config") == ("id", "text")
    assert WING not in sys.modules


class _Bench:
    triplets: list = []


def test_a_declared_load_is_not_called_without_what_it_needs(tmp_path):
    """Without its option (or without rows of its config) the wing's load hook is not called: no inputs, and its
    module (here one that cannot be imported) is never imported."""
    load = read_declaration(write(tmp_path, DECLARED)).load
    assert load(_Bench(), SuiteOptions({}), None) is None
    assert load(_Bench(), SuiteOptions({"declared_dir": "x"}), None) is None        # the dataset has no triplets
    bench = _Bench()
    bench.triplets = [{"set_id": "s"}]
    with pytest.raises(ModuleNotFoundError, match=WING):         # both given: the hook is called (and imported)
        load(bench, SuiteOptions({"declared_dir": "x"}), None)


@pytest.mark.parametrize("text, says", [
    ('name = "x"\nconditions = ["x"]\nplan = "plan"\n', "'hooks' must name the module of its hooks"),
    (f'hooks = "{WING}"\nname = "x"\nconditions = ["x"]\nplan = "plan"\ncolour = "red"\n',
     "colour is not a key of a Suite"),
    (f'hooks = "{WING}"\nname = "x"\nconditions = ["x"]\nplan = "plan"\n[[uses]]\nscorer = "s"\nwhen = 3\n',
     r"uses\[0\].when must name a function"),
    (f'hooks = "{WING}"\nname = "x"\nconditions = ["x"]\nplan = "plan"\n[report]\nsection = "x"\n'
     '[report.leaderboard]\ncolumns = []\n', "report.leaderboard cannot be declared as data"),
    (f'hooks = "{WING}"\nname = "x"\nconditions = ["x"]\n', "missing 1 required positional argument: 'plan'"),
    ('name = "x\n', "not a TOML file"),
])
def test_a_file_that_is_not_a_declaration_is_one_line_naming_it(tmp_path, text, says):
    path = write(tmp_path, text)
    with pytest.raises(SuiteError, match=says) as raised:
        read_declaration(path)
    assert str(raised.value).startswith(f"{path}: ") and "\n" not in str(raised.value)


def test_the_built_in_wings_declared_as_data_are_registered_from_their_files():
    """OpenSafeIntent's and the triplets' records are their suite.toml: the registry read them (their conditions,
    options and files), and the triplets' load needs the release folder and the dataset's triplets."""
    osi, triplet = suite_of("opensafeintent"), suite_of("triplet")
    assert [o.flag for o in osi.options] == ["--opensafeintent", "--opensafeintent-sets"]
    assert osi.options[1].choices == ("release", "triplets") and osi.options[1].default == "release"
    assert [f.name for f in (*osi.files, *triplet.files)] == ["opensafeintent_probe.jsonl", "triplet_probe.jsonl"]
    assert triplet.load.options == ("opensafeintent",) and triplet.load.rows == ("triplets",)
    assert triplet.rank < osi.rank


def test_a_config_without_its_columns_is_one_line(tmp_path):
    path = write(tmp_path, f'hooks = "{WING}"\nname = "x"\nconditions = ["x"]\nplan = "plan"\n[[configs]]\nname = "c"\n')
    with pytest.raises(SuiteError, match=r"configs\[0\] must have a 'name' and a list of 'columns'"):
        read_declaration(path)
