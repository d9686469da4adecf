"""A local dataset folder is prepared again only when its files changed (carryon_eval.fingerprint)."""
from __future__ import annotations

from pathlib import Path

from helpers.rollout_data import make_dataset

from carryon_eval import fingerprint
from carryon_eval.dataset import load_benchmark


def test_unchanged_folder_is_not_prepared_again_and_a_changed_one_is(tmp_path):
    folder = make_dataset(tmp_path / "data")
    first = load_benchmark(folder)
    fp = fingerprint.folder_fingerprint(Path(folder))
    assert all(fingerprint.download_mode(Path(folder), c, fp) is None
               for c in ("queries", "checklists", "flows", "conversations"))
    assert load_benchmark(folder).queries == first.queries

    queries = folder / "queries.jsonl"
    queries.write_text(queries.read_text().replace("pinball coin door", "jukebox coin door"))
    changed = fingerprint.folder_fingerprint(Path(folder))
    assert changed != fp and fingerprint.download_mode(Path(folder), "queries", changed) == fingerprint.FORCE
    assert "jukebox" in load_benchmark(folder).queries["q1"]["query"]          # never the stale rows


def test_hidden_files_do_not_change_the_fingerprint(tmp_path):
    folder = make_dataset(tmp_path / "data")
    fp = fingerprint.folder_fingerprint(folder)
    (folder / ".cache").mkdir()
    (folder / ".cache" / "x.lock").write_text("lock")
    assert fingerprint.folder_fingerprint(folder) == fp
