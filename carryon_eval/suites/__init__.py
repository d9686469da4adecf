"""The benchmark suites, one wing each: carryonbench (the paper's conditions), triplet, opensafeintent; each
wing's record is its record.py."""
