"""Judging: scorers (one case -> one judgment), the judge phase that runs them over a run folder and stores their
records (phase, store), the user-turn fidelity judges (fidelity), and Batch API export/import (batch)."""
