"""A run folder opened again as every command on it opens it: its run.json read (its notice said), its dataset
loaded as the run had it (a Hub dataset at the commit the run fetched, its limit and subset) and checked against
the run's fingerprint, and the suites' own inputs loaded and checked against what the run recorded. The
application layer's commands and a wing's own commands (e.g. CarryOnBench's `annotate`) share it."""
from __future__ import annotations

from typing import Protocol

from carryon_eval.dataset.load import Benchmark, load_benchmark
from carryon_eval.dataset.subset import apply_subset
from carryon_eval.run.folder import RunFolder
from carryon_eval.run.records import RunMeta
from carryon_eval.suite.registry import load_inputs


class Lines(Protocol):
    """Where a command's lines for the user go (app.config.Output is one)."""

    def info(self, text: str) -> None: ...


def open_run(run: RunFolder, out: Lines) -> tuple[RunFolder, RunMeta, Benchmark]:
    """The run, its run.json and its dataset with the suites' inputs; a dataset subset that cannot be taken
    again raises carryon_eval.dataset.subset.SubsetError (one line)."""
    meta = run.read_meta()
    if meta.notice:
        out.info(meta.notice)
    # a Hub dataset is read again at the commit the run fetched, not at whatever its revision names today
    bench = load_benchmark(run.dataset_source(meta), meta.dataset.commit or meta.dataset.revision)
    bench = apply_subset(bench.limited(meta.limit), meta.subset)
    run.check_dataset(meta, bench.fingerprint())
    load_inputs(bench, {"limit": meta.limit}, meta.suites, reopen=True, base=run.path)   # the suites' own inputs, checked
    return run, meta, bench
