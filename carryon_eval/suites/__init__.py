"""The benchmark suites, one wing each: carryonbench (the paper's conditions), triplet, opensafeintent; each
wing's record is its suite.toml (a declaration as data, read without importing the wing: carryon_eval.suite.declared)
or its record.py (a module that registers its suite on import)."""
