"""croissant.json: written by every build, pinned by the MANIFEST, Croissant 1.0 valid (mlcroissant), and
describing exactly the card's configs and field tables."""
import json

import pyarrow.parquet as pq
import pytest
from support.synthetic_source import build_synthetic

from carryonbench_builder.croissant import croissant, field_descriptions, split_card
from carryonbench_builder.files import file_entry
from carryonbench_builder.sources import CASEBENCH

RAI = ("rai:dataCollection", "rai:dataAnnotationProtocol", "rai:dataBiases", "rai:dataLimitations",
       "rai:personalSensitiveInformation", "rai:dataUseCases", "rai:dataSocialImpact")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_synthetic(tmp_path_factory.mktemp("croissant"))


def doc(folder):
    return json.loads((folder / "croissant.json").read_text())


def test_croissant_is_pinned_by_the_manifest_and_rebuilds_byte_identical(built, tmp_path):
    manifest = json.loads((built / "MANIFEST.json").read_text())
    assert manifest["files"]["croissant.json"] == file_entry(built / "croissant.json")
    again = build_synthetic(tmp_path)
    assert (again / "croissant.json").read_bytes() == (built / "croissant.json").read_bytes()
    assert (again / "MANIFEST.json").read_bytes() == (built / "MANIFEST.json").read_bytes()


def test_mlcroissant_validates_it_and_reads_the_records(built):
    mlc = pytest.importorskip("mlcroissant", reason="mlcroissant is in the test extra: pip install -e '.[test]'")
    dataset = mlc.Dataset(jsonld=str(built / "croissant.json"))     # raises ValidationError on any error
    assert dataset.metadata.ctx.issues.errors == set()
    assert dataset.metadata.ctx.issues.warnings == set(), dataset.metadata.ctx.issues.report()
    # a --no-llm build declares no checklists config (it has no rows), so Croissant has no record set for it
    assert [r.name for r in dataset.metadata.record_sets] == ["queries", "flows", "conversations"]
    flows = pq.read_table(built / "data" / "flows" / "test.parquet").to_pylist()
    records = list(dataset.records("flows"))
    assert len(records) == len(flows) == 1866
    assert [r["flows/flow_id"].decode() for r in records[:5]] == [f["flow_id"] for f in flows[:5]]
    assert [m.decode() for m in records[0]["flows/moves"]] == flows[0]["moves"]


def test_fields_types_and_descriptions_are_the_cards(built):
    header, body = split_card((built / "README.md").read_text())
    tables = field_descriptions(body)
    got = {rs["name"]: rs for rs in doc(built)["recordSet"]}
    assert list(got) == [c["config_name"] for c in header["configs"]]
    for info in header["dataset_info"]:
        config = info["config_name"]
        fields = got[config]["field"]
        assert [f["name"] for f in fields] == [f["name"] for f in info["features"]]
        for field, feature in zip(fields, info["features"]):
            assert field["description"] == tables[config][field["name"]] and field["description"]
            dtype = feature.get("dtype") or feature["list"]
            assert field["dataType"] == {"string": "sc:Text", "float64": "sc:Float", "int64": "sc:Integer"}[dtype]
            assert field.get("repeated", False) == ("list" in feature)
            assert field["source"]["fileObject"]["@id"] == f"data/{config}/test.parquet"
    files = {d["@id"]: d for d in doc(built)["distribution"]}
    for rel, entry in json.loads((built / "MANIFEST.json").read_text())["files"].items():
        if rel.endswith(".parquet"):
            assert files[rel]["sha256"] == entry["sha256"] and files[rel]["contentSize"] == f"{entry['size']} B"


def test_responsible_ai_fields_and_gating(built):
    d = doc(built)
    assert d["conformsTo"] == "http://mlcommons.org/croissant/1.0" and d["version"] == "0.1.0"
    for key in RAI:
        assert isinstance(d[key], str) and len(d[key]) > 80, key
    header, _ = split_card((built / "README.md").read_text())
    assert d["conditionsOfAccess"] == header["extra_gated_prompt"]
    assert "gated" in d["rai:dataSocialImpact"]
    assert d["rai:dataUseCases"].startswith("Intended use:\n- Measuring whether a model recovers")
    assert "\n\nOut-of-scope use:\n- Training models to comply" in d["rai:dataUseCases"]
    assert d["description"].startswith("> **Content warning.**") and "CarryOnBench asks:" in d["description"]
    assert "Useless but Safe?" in d["citeAs"]


def test_a_field_the_card_does_not_describe_is_an_error(built):
    card = (built / "README.md").read_text().replace("| n_benign_moves | int64 |", "| renamed | int64 |")
    with pytest.raises(ValueError, match="the flows field table does not describe n_benign_moves"):
        croissant(built, card, {"release": "v0.1.0"}, CASEBENCH.card.croissant)


# ---------------------------------------------------------------- the real builds: CASE-Bench --no-llm and the open one
def real_build(out, *args):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "carryonbench_builder.cli", "build", "--out", str(out), "--no-llm", *args],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def real_builds(tmp_path_factory):
    """{name: folder} of the builds whose source is beside the clone (../shared/data); skips when neither is."""
    from support.shared_data import CASEBENCH, OPENSAFEINTENT

    root = tmp_path_factory.mktemp("real")
    builds = {}
    if CASEBENCH.is_file():
        builds["casebench"] = real_build(root / "casebench", "--source", str(CASEBENCH))
    if (OPENSAFEINTENT / "dataset.json").is_file():
        builds["open"] = real_build(root / "open", "--source", str(OPENSAFEINTENT))
        builds["open-hub"] = real_build(root / "open-hub", "--source", str(OPENSAFEINTENT),
                                        "--hub-repo", "example-org/carryonbench-open")
    if not builds:
        pytest.skip("neither source is beside the clone (CI has ../shared/data/casebench and opensafeintent)")
    return builds


def test_mlcroissant_validates_both_real_builds(real_builds):
    mlc = pytest.importorskip("mlcroissant", reason="mlcroissant is in the test extra: pip install -e '.[test]'")
    for name, folder in real_builds.items():
        dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))
        assert dataset.metadata.ctx.issues.errors == set(), name
        assert dataset.metadata.ctx.issues.warnings == set(), (name, dataset.metadata.ctx.issues.report())
        n = json.loads((folder / "MANIFEST.json").read_text())["counts"]["conversations"]
        assert sum(1 for _ in dataset.records("conversations")) == n, name


def test_the_license_fields_say_what_the_card_says(real_builds):
    if "casebench" in real_builds:                       # a custom, gated license: id, name, terms, once each
        d, (header, _) = doc(real_builds["casebench"]), split_card((real_builds["casebench"] / "README.md").read_text())
        assert d["license"].startswith(f"other: {header['license_name']} (") and d["license"].count("other") == 1
        assert d["conditionsOfAccess"] == header["extra_gated_prompt"] and "url" not in d
    if "open" in real_builds:                            # an SPDX license, ungated: its URL, no access conditions
        d = doc(real_builds["open"])
        assert d["license"] == "https://spdx.org/licenses/Apache-2.0.html"
        assert d["creditText"].startswith("Apache-2.0, from OpenSafeIntent") and "apache-2.0: apache-2.0" not in d
        assert "conditionsOfAccess" not in d and "url" not in d        # no Hub repository named at build time
        assert d["name"] == "carryonbench-open" and d["version"] == "1.0.0"
        hub = doc(real_builds["open-hub"])
        assert hub["url"] == "https://huggingface.co/datasets/example-org/carryonbench-open"
        manifest = json.loads((real_builds["open-hub"] / "MANIFEST.json").read_text())
        assert manifest["hub_repo"] == "example-org/carryonbench-open"
