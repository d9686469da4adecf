"""Helpers shared by several test modules (see tests/conftest.py, which puts tests/ on sys.path)."""
