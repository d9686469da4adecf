"""Build recipes: one reviewed TOML file that says how a release is built (`carryon-build build --recipe FILE`).

    [recipe]                      # what it is (free text, shown by --dry-run)
    name = "paper"
    description = "..."

    [build]                       # `carryon-build build` options, by their option names ("-" or "_")
    harm_classifier_style = "wildguard"
    generator_models = ["model-1", "model-2"]
    role_models = ["decomposer=model-3"]
    min_items = 7

Every key of ``[build]`` is the default of the option of the same name; options given on the command line
still override it: a list option given on the command line replaces the recipe's list, except the per-role
ones (role_models, role_endpoints), where a flag replaces only the roles it names. Unknown keys, and
keys that cannot come from a file (--recipe itself, --dry-run, --no-llm), are refused with one line naming
them, so a typo never silently builds something else.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Iterable

#: Options a recipe may not set: how a command runs, not what it builds.
NOT_IN_RECIPES = ("recipe", "dry_run", "no_llm", "verbose")


class RecipeError(ValueError):
    """A recipe that cannot be used; the message is one line."""


def load_recipe(path: Path, options: Iterable[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the [recipe] metadata, the [build] options as {option name: value}) of a recipe file; ``options``
    are the build command's option names."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecipeError(f"recipe {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError(f"recipe {path}: cannot read it ({exc.__class__.__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(f"recipe {path}: not valid TOML ({exc})") from None
    unknown_tables = sorted(set(data) - {"recipe", "build"})
    if unknown_tables or not isinstance(data.get("build", {}), dict):
        raise RecipeError(f"recipe {path}: expected the tables [recipe] and [build], got {', '.join(unknown_tables)}")
    allowed = set(options) - set(NOT_IN_RECIPES)
    build = {key.replace("-", "_"): value for key, value in data.get("build", {}).items()}
    bad = sorted(k for k in build if k not in allowed)
    if bad:
        raise RecipeError(f"recipe {path}: unknown or not allowed option(s) in [build]: {', '.join(bad)}")
    return dict(data.get("recipe", {})), build


def describe(meta: dict[str, Any], path: Path) -> str:
    """One line for the dry run: which recipe, and what it says it is."""
    name = meta.get("name") or Path(path).stem
    text = f"recipe {name} ({path})"
    return f"{text}: {meta['description']}" if meta.get("description") else text
