"""A local dataset folder is prepared once per content (carryon_eval.dataset.fingerprint), never read stale."""
from __future__ import annotations

import shutil

from support.rollout_data import make_dataset

from carryon_eval.dataset import fingerprint
from carryon_eval.dataset.load import load_benchmark


def test_same_files_share_a_prepared_copy_and_changed_files_get_a_new_one(tmp_path):
    folder = make_dataset(tmp_path / "data")
    first = load_benchmark(folder)
    prepared = fingerprint.cache_dir(folder)
    assert prepared.is_dir() and load_benchmark(folder).queries == first.queries

    queries = folder / "queries.jsonl"
    queries.write_text(queries.read_text().replace("pinball coin door", "jukebox coin door"))
    assert fingerprint.cache_dir(folder) != prepared
    assert "jukebox" in load_benchmark(folder).queries["q1"]["query"]          # never the stale rows


def test_another_folder_of_the_same_name_is_never_read_stale(tmp_path):
    a = make_dataset(tmp_path / "a" / "data")
    b = tmp_path / "b" / a.name
    shutil.copytree(a, b)
    (b / "queries.jsonl").write_text((b / "queries.jsonl").read_text().replace("train ticket", "bus ticket"))
    assert "train ticket" in load_benchmark(a).queries["q2"]["query"]
    assert "bus ticket" in load_benchmark(b).queries["q2"]["query"]
    assert "train ticket" in load_benchmark(a).queries["q2"]["query"]


def test_hidden_files_do_not_change_the_fingerprint(tmp_path):
    folder = make_dataset(tmp_path / "data")
    fp = fingerprint.folder_fingerprint(folder)
    (folder / ".cache").mkdir()
    (folder / ".cache" / "x.lock").write_text("lock")
    assert fingerprint.folder_fingerprint(folder) == fp
