"""Dataset loading: a dataset folder or Hub id -> `Benchmark` (load), the folder fingerprint that decides when a
local folder is prepared again (fingerprint), named subsets (subset), a row's identifying columns (rows: RowKeys), the built-in sample (sample_data/) and the
SORRY-Bench domain map (data/)."""
