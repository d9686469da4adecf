"""The OpenSafeIntent wing's error: a leaf module, so that the release loader and the judge prompts both raise it
without importing each other."""
from __future__ import annotations

from carryon_eval.dataset.load import DatasetError


class ReleaseError(DatasetError):
    """An unusable release folder; one line naming the file, row and field and what was expected."""
