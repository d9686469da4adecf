"""A run folder opened again as every command on it opens it: its run.json read (its notice said), its dataset
loaded as the run had it (a Hub dataset at the commit the run fetched, its limit and subset) and checked against
the run's fingerprint, and the suites' own inputs loaded and checked against what the run recorded. The
application layer's commands and a wing's own commands (e.g. CarryOnBench's `annotate`) share it."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Protocol

from carryon_eval.dataset.load import Benchmark, load_benchmark
from carryon_eval.dataset.subset import apply_subset
from carryon_eval.run.folder import RunError, RunFolder
from carryon_eval.run.records import RunMeta
from carryon_eval.suite.registry import load_inputs


class Lines(Protocol):
    """Where a command's lines for the user go (app.config.Output is one)."""

    def info(self, text: str) -> None: ...


def open_run(run: RunFolder, out: Lines, dataset: Optional[str] = None) -> tuple[RunFolder, RunMeta, Benchmark]:
    """The run, its run.json and its dataset with the suites' inputs; a dataset subset that cannot be taken
    again raises carryon_eval.dataset.subset.SubsetError (one line). ``dataset``: the dataset folder given anew
    (`report --dataset`), else the one run.json names, found again where the run folder was moved or copied."""
    meta = run.read_meta()
    if meta.notice:
        out.info(meta.notice)
    found = dataset if dataset is not None else moved_dataset(run, meta, out)
    bench = _as_run_read(run.dataset_source(meta) if found is None else found, meta, recorded=found is None)
    run.check_dataset(meta, bench.fingerprint())          # a dataset given anew: the run's rows, or refused
    load_inputs(bench, {"limit": meta.limit}, meta.suites, reopen=True, base=run.path)   # the suites' own inputs, checked
    return run, meta, bench


def _as_run_read(source: Optional[str], meta: RunMeta, recorded: bool = True) -> Benchmark:
    """The dataset as the run took it (its limit and subset); the recorded one from the Hub at the commit the run
    fetched, not at whatever its revision names today; a folder found or given anew has no revision."""
    bench = load_benchmark(source, (meta.dataset.commit or meta.dataset.revision) if recorded else None)
    return apply_subset(bench.limited(meta.limit), meta.subset)


def moved_dataset(run: RunFolder, meta: RunMeta, out: Lines) -> Optional[str]:
    """Where a run folder moved or copied to another depth finds its dataset folder again: run.json records it
    relative to the run folder, so once that path leads nowhere, a folder of the recorded name in the folders above
    the run is taken when its rows are the ones run.json's content hashes pin (said so); None: the recorded one is
    there (or is no folder: a Hub id, the sample). RunError naming `report --dataset` when none is found."""
    recorded = meta.dataset.source
    source = run.dataset_source(meta)
    if meta.dataset.kind not in (None, "folder") or not recorded or source is None or not (
            recorded.startswith(".") or Path(recorded).is_absolute()) or Path(source).exists():
        return None
    name = Path(recorded).name
    for above in (run.path.resolve(), *run.path.resolve().parents):
        candidate = above / name
        if candidate.is_dir() and _same_rows(candidate, meta):
            out.info(f"dataset: {recorded} (run.json's, from the run folder) is not there; {candidate} holds the "
                     "same rows (their content hashes match), read from there")
            return str(candidate)
    pinned = "" if meta.dataset.content_sha256 else " (this run.json records no content hashes to check one by)"
    raise RunError(f"{run.path}: its dataset {recorded} (run.json's, from the run folder) is not there, and no "
                   f"folder named {name} above the run holds its rows{pinned}; give the dataset folder: carryon-eval "
                   f"report {run.path} --dataset DIR")


def _same_rows(folder: Path, meta: RunMeta) -> bool:
    """Whether ``folder``'s rows (as the run took them: limit, subset) are those run.json's content hashes pin."""
    if not meta.dataset.content_sha256:
        return False
    try:
        bench = _as_run_read(str(folder), meta, recorded=False)
    except Exception:  # noqa: BLE001 - a folder that does not load is not the run's dataset
        return False
    return not meta.dataset.changed_configs(bench.fingerprint())
