"""Judging: scorers (one case -> one judgment), the judge phase that runs them over a run folder and stores their
records (phase, store), the runner of the calls the probes make beside it (side_calls), and Batch API export/import
(batch)."""
