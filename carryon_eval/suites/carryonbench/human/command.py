"""`carryon-eval annotate RUNDIR`, the command's one application function: the run folder opened as every command
opens it (carryon_eval.suite.reopen.open_run), a stratified sample of one task's cases drawn (annotate) and its
page written. It sits in the wing with the human validation it runs, so that the application layer names none of
CarryOnBench's tasks; the CLI imports it when the command runs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from carryon_eval.run.folder import RunFolder
from carryon_eval.suite.reopen import Lines, open_run
from carryon_eval.suites.carryonbench.human.annotate import sample_cases, strata_counts, write_annotation


@dataclass(frozen=True)
class AnnotateConfig:
    """`carryon-eval annotate RUNDIR`: which task, how many cases, the seed, where and in which format."""
    rundir: Path
    task: str
    sample: int
    seed: int = 0
    out: Optional[Path] = None
    fmt: str = "html"                  # or "label-studio"
    judge: Optional[str] = None


async def annotate_folder(cfg: AnnotateConfig, out: Lines) -> None:
    """`carryon-eval annotate RUNDIR`: a stratified sample of one task's cases as an annotation page (or
    Label Studio's tasks and labeling config)."""
    run, _, bench = open_run(RunFolder(cfg.rundir), out)
    cases = sample_cases(run, bench, cfg.task, cfg.sample, cfg.seed, cfg.judge)
    default = (f"annotate-{cfg.task}-seed{cfg.seed}.html" if cfg.fmt == "html"
               else f"label-studio-{cfg.task}-seed{cfg.seed}.json")
    paths = write_annotation(cases, cfg.task, cfg.out or run.path / default, source=str(run.path), fmt=cfg.fmt)
    strata = ", ".join(f"{k} {n}" for k, n in strata_counts(cases).items())
    out.info(f"annotate: {len(cases)} {cfg.task} cases (by condition/answer: {strata})")
    for path in paths:
        out.info(f"wrote {path}")
