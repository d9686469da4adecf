"""OpenSafeIntent as itself: its release folder, its reference judges and readings, every number of its
reference implementation, and its file layout (export and import)."""
from carryon_eval.suites.opensafeintent.metrics import HEADLINE, ScoredSet, summarize
from carryon_eval.suites.opensafeintent.release import PROMPT_NAMES, PromptSet, Release, ReleaseError, load_release

__all__ = ["HEADLINE", "PROMPT_NAMES", "PromptSet", "Release", "ReleaseError", "ScoredSet", "load_release",
           "summarize"]
