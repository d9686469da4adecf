"""CarryOnBench builder: CASE-Bench source -> versioned Hugging Face dataset folder + MANIFEST.json."""

from carryon_eval import __version__

BUILDER_VERSION = __version__
