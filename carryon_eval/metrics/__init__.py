"""Shared statistics: pure functions over records, no I/O. stats: the bootstrap, bounds, intervals, agreement,
rank correlation and the mixed models of `compare`; estimators: the length-stratified estimators of a number
over conversations, its bootstrap replicates and its bounds. A suite's own metrics live in its wing."""
