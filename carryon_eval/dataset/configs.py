"""The columns of each config a dataset is read with: the release tables' (schema.TABLE_COLUMNS), and those of the
optional configs a wing reads, declared by that wing when its record registers (e.g. the triplet wing's
``triplets``), so that dataset/ names no suite's config.

    register_columns("triplets", ("set_id", "variant", ...))
    columns_of("queries")      # -> the columns every dataset's queries config has at least

A config no registered wing declares is read as it is (a run that reads it is its wing's, which declares it).
"""
from __future__ import annotations

from carryon_eval.schema import TABLE_COLUMNS

_COLUMNS: dict[str, tuple[str, ...]] = dict(TABLE_COLUMNS)


def register_columns(config: str, columns: tuple[str, ...]) -> None:
    """Declare the columns optional config ``config`` has at least (a wing's record, when it registers)."""
    _COLUMNS[config] = tuple(columns)


def columns_of(config: str) -> tuple[str, ...]:
    """The columns ``config`` must have at least (none for a config no one declared)."""
    return _COLUMNS.get(config, ())


class ColumnsOf:
    """``COLUMNS[config]``: the columns of ``config`` as declared now (a mapping view over the declarations)."""

    def __getitem__(self, config: str) -> tuple[str, ...]:
        return columns_of(config)


COLUMNS = ColumnsOf()
