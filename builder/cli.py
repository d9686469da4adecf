"""`carryon-build`: build a CarryOnBench dataset folder from the CASE-Bench source, and verify one."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from .flows import DEFAULT_SEED


def fail(message: str) -> "None":
    click.echo(f"carryon-build: error: {message}", err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Build the CarryOnBench dataset (queries, checklists, flows, conversations) and verify releases."""


@cli.command()
@click.option("--source", "source", required=True, type=click.Path(path_type=Path),
              help="CASE-Bench JSON (CASEBench_data.json).")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Dataset folder to write.")
@click.option("--no-llm", is_flag=True, help="Skip the LLM stages: empty benign_intent, no checklist rows.")
@click.option("--seed", default=DEFAULT_SEED, show_default=True, help="Seed of the flow pool and the plan.")
@click.option("--limit", type=click.IntRange(min=1), help="Build only the first N selected queries.")
@click.option("--release", default=None, help="Release name written into MANIFEST.json and the card.")
def build(source: Path, out: Path, no_llm: bool, seed: int, limit: Optional[int], release: Optional[str]) -> None:
    """Build a dataset folder that `datasets.load_dataset(OUT, CONFIG, split="test")` reads offline."""
    from . import BUILDER_VERSION
    from .pipeline import build as run_build
    from .source import SourceError

    if not no_llm:
        fail("the LLM stages need an endpoint: pass --endpoint URL --model NAME, or --no-llm")
    try:
        run_build(source, out, seed=seed, limit=limit, release=release or f"v{BUILDER_VERSION}",
                  log=lambda m: click.echo(m, err=True))
    except SourceError as exc:
        fail(str(exc))
    except FileExistsError as exc:
        fail(str(exc))


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--manifest", type=click.Path(path_type=Path),
              help="Check against this manifest (e.g. releases/v0.1.0/MANIFEST.json) instead of FOLDER's own.")
def verify(folder: Path, manifest: Optional[Path]) -> None:
    """Recompute hashes, counts, cross-references and flow rules; name each mismatch."""
    from .verify import verify_folder

    problems, man = verify_folder(folder, manifest)
    for p in problems:
        click.echo(f"MISMATCH {p}")
    if problems:
        click.echo(f"verify: {len(problems)} mismatch(es) in {folder}", err=True)
        sys.exit(1)
    click.echo(f"OK {folder} is release {man.get('release')} exactly: {len(man['files'])} files, "
               f"counts {{{', '.join(f'{k}: {v}' for k, v in man['counts'].items() if isinstance(v, int))}}}")


# Configs without any source text (ids, move names, counts): the only tables a repository may hold.
TEXT_FREE_CONFIGS = ("flows", "conversations")


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--to", "dest", required=True, type=click.Path(path_type=Path), help="e.g. releases/v0.1.0")
def freeze(folder: Path, dest: Path) -> None:
    """Copy a verified build's MANIFEST.json and its text-free tables (flows, conversations) into DEST."""
    import shutil

    from .dataset_folder import parquet_name
    from .verify import verify_folder

    problems, man = verify_folder(folder)
    if problems:
        fail(f"{folder} does not verify ({problems[0]}); rebuild it first")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / "MANIFEST.json", dest / "MANIFEST.json")
    for config in TEXT_FREE_CONFIGS:
        (dest / parquet_name(config)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / parquet_name(config), dest / parquet_name(config))
    click.echo(f"froze release {man['release']} into {dest}: MANIFEST.json + {', '.join(TEXT_FREE_CONFIGS)}")


def main() -> None:
    cli()
