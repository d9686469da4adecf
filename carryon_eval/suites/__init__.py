"""The CarryOnBench suite record (carryonbench). Other suites live in their feature folders (triplet/suite.py)."""
