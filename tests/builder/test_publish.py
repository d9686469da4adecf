"""`carryon-build publish`: huggingface-hub's real client against a local Hub (tests/support/hub_server.py).

The dataset folder is built from tests/synthetic_source.py (made-up, harmless queries), so these tests never
need the gated source.
"""
import json
import os
import subprocess
import sys

import pytest
from support.hub_server import HubServer
from support.synthetic_source import build_synthetic

TOKEN = "hf_testtoken_Zq8v1xK3mP0wR7"
REPO_ID = "carryon-org/carryonbench"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_synthetic(tmp_path_factory.mktemp("publish"))


@pytest.fixture
def hub():
    with HubServer(TOKEN) as server:
        yield server


def carryon_build(*args, hub=None, token=TOKEN, home=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1", HF_HOME=str(home or "/nonexistent-hf-home"))
    if hub is not None:
        env["HF_ENDPOINT"] = hub.endpoint
    if token is not None:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-c", "from carryonbench_builder.cli import main; main()", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=home)


def publish(folder, hub, *extra, token=TOKEN, home=None):
    return carryon_build("publish", folder, "--repo-id", REPO_ID, "--tag", "v0.1.0", *extra, hub=hub, token=token,
                         home=home)


def one_error_line(r, expected):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stdout + r.stderr
    assert lines[0].startswith("carryon-build: error: ") and expected in lines[0], lines[0]
    assert "Traceback" not in r.stderr


def manifest_files(folder):
    return set(json.loads((folder / "MANIFEST.json").read_text())["files"]) | {"MANIFEST.json"}


def test_dry_run_prints_the_plan_and_calls_nothing(built, hub):
    r = publish(built, hub, "--dry-run", token=None)
    assert r.returncode == 0, r.stderr
    for rel in manifest_files(built):
        assert f"add {rel}" in r.stdout
    size = (built / "data" / "flows" / "test.parquet").stat().st_size
    assert f"data/flows/test.parquet  {size:,} bytes" in r.stdout
    assert "gated=manual" in r.stdout and "tag: v0.1.0" in r.stdout and REPO_ID in r.stdout
    assert hub.calls == [] and hub.repos == {}


def test_publish_is_one_gated_commit_with_the_tag_on_it(built, hub, tmp_path):
    r = publish(built, hub, home=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    repo = hub.repo(REPO_ID)
    assert len(repo.commits) == 2                                 # the Hub's initial commit + ours
    ours = repo.commits[-1]
    assert repo.tags == {"v0.1.0": ours.oid} and repo.branches["main"] == ours.oid
    assert repo.gated == "manual" and repo.private is False
    assert set(ours.files) == manifest_files(built) | {".gitattributes"}
    for rel in manifest_files(built):
        assert ours.files[rel].data == (built / rel).read_bytes(), rel
    assert ours.files["data/flows/test.parquet"].lfs and not ours.files["README.md"].lfs
    assert f"OK {REPO_ID}@v0.1.0 is release v0.1.0 exactly: commit {ours.oid}" in r.stdout
    assert f"revision: v0.1.0 (commit {ours.oid})" in r.stdout
    assert f"url: {hub.endpoint}/datasets/{REPO_ID}/tree/v0.1.0" in r.stdout
    assert "@misc{carryonbench_dataset_v010," in r.stdout and f"commit {ours.oid}" in r.stdout
    # a second run finds the tag already holding exactly this folder: no new commit, same tag, still OK
    again = publish(built, hub, home=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already holds exactly this folder" in again.stderr
    assert len(repo.commits) == 2 and repo.tags == {"v0.1.0": ours.oid}


def test_private_auto_gating_and_stale_remote_files_deleted_in_the_same_commit(built, hub, tmp_path):
    from huggingface_hub import CommitOperationAdd, HfApi
    api = HfApi(endpoint=hub.endpoint, token=TOKEN)
    api.create_repo(REPO_ID, repo_type="dataset")
    api.create_commit(REPO_ID, [CommitOperationAdd("old/stale.txt", b"from an earlier upload"),
                                CommitOperationAdd("README.md", b"old card")],
                      commit_message="earlier", repo_type="dataset")
    r = publish(built, hub, "--private", "--gated", "auto", home=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    repo = hub.repo(REPO_ID)
    assert len(repo.commits) == 3 and repo.tags["v0.1.0"] == repo.commits[-1].oid
    assert "old/stale.txt" not in repo.commits[-1].files and "old/stale.txt" in repo.commits[-2].files
    assert repo.commits[-1].files["README.md"].data == (built / "README.md").read_bytes()
    assert repo.gated == "auto" and repo.private is True


@pytest.mark.parametrize("path", ["README.md", "data/conversations/test.parquet"])
def test_the_remote_check_catches_a_file_altered_on_the_server(built, hub, tmp_path, path):
    hub.tamper[path] = b"altered by the store"
    r = publish(built, hub, home=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    mismatches = [line for line in r.stdout.splitlines() if line.startswith("MISMATCH remote")]
    assert len(mismatches) == 1 and mismatches[0].startswith(f"MISMATCH remote {path}: remote "), r.stdout
    assert "OK " not in r.stdout


def test_a_tag_on_other_content_is_never_moved(built, hub, tmp_path):
    assert publish(built, hub, home=tmp_path).returncode == 0
    repo = hub.repo(REPO_ID)
    tagged = repo.tags["v0.1.0"]
    hub.alter(REPO_ID, "data/flows/test.parquet", b"changed on the server after the release")
    r = publish(built, hub, home=tmp_path)
    one_error_line(r, f"tag v0.1.0 already exists on {REPO_ID} at commit {tagged[:12]}, which does not hold "
                      "this folder (data/flows/test.parquet: remote LFS sha256/size")
    assert repo.tags == {"v0.1.0": tagged} and len(repo.commits) == 2


def test_a_folder_that_does_not_verify_is_refused_before_any_call(built, hub, tmp_path):
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    (copy / "data" / "extra.txt").write_text("not in the manifest")
    one_error_line(publish(copy, hub), "does not verify (data/extra.txt: not listed in the manifest")
    one_error_line(carryon_build("publish", built, "--repo-id", REPO_ID, "--tag", "v0.2.0", hub=hub),
                   "--tag v0.2.0 but")
    one_error_line(carryon_build("publish", built, "--repo-id", "carryonbench", "--tag", "v0.1.0", hub=hub),
                   "expected ORG/NAME")
    one_error_line(carryon_build("publish", built, "--repo-id", REPO_ID, "--tag", "0.1", hub=hub),
                   "expected vMAJOR.MINOR.PATCH")
    assert hub.calls == []


def test_no_token_or_a_wrong_one_is_one_line_and_no_token_is_ever_output(built, hub, tmp_path):
    one_error_line(publish(built, hub, token=None, home=tmp_path), "no Hugging Face token: set HF_TOKEN")
    assert hub.calls == []
    wrong = "hf_wrongtoken_Yq2n5Lp9"
    r = publish(built, hub, token=wrong, home=tmp_path)
    one_error_line(r, "401")
    assert wrong not in r.stdout + r.stderr and hub.seen_tokens == {wrong}


def test_an_unreachable_hub_is_one_line(built, tmp_path):
    import socket
    from types import SimpleNamespace

    with socket.socket() as sock:                     # a loopback port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        gone = SimpleNamespace(endpoint=f"http://127.0.0.1:{sock.getsockname()[1]}")
    r = publish(built, gone, home=tmp_path)
    one_error_line(r, f"the Hub at {gone.endpoint}: ")
    assert TOKEN not in r.stdout + r.stderr


def test_the_token_reaches_the_hub_and_no_output_or_file(built, hub, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    runs = [publish(built, hub, "--dry-run", home=home), publish(built, hub, home=home)]
    hub.alter(REPO_ID, "README.md", b"changed on the server")    # publish once more: commit, tag, mismatch
    hub.repo(REPO_ID).tags.clear()
    hub.tamper["README.md"] = b"x"
    runs.append(publish(built, hub, home=home))
    assert [r.returncode for r in runs] == [0, 0, 1], [r.stderr for r in runs]
    assert hub.seen_tokens == {TOKEN}                             # the client did send it, in its header only
    for r in runs:
        assert TOKEN not in r.stdout and TOKEN not in r.stderr
    for root in (home, built):
        for path in root.rglob("*"):
            if path.is_file():
                assert TOKEN.encode() not in path.read_bytes(), path
