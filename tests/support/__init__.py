"""Code shared by the tests: the scripted servers, the browser, and the helpers (see tests/conftest.py).
Imported as `support.X`: pyproject's pytest settings put tests/ on the path."""
