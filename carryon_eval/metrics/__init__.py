"""Metrics: pure functions over records, no I/O. conditions: the CarryOnBench conditions' numbers; stats: the
bootstrap, rank correlation and the mixed models of `compare`."""
