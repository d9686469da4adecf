"""Where the tests find the repository (`REPO`), its recorded fixtures (`FIXTURES`: tests/fixtures) and the
third-party data beside the clone (../shared in CI; a worktree one level deeper finds the same folder further up)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OPENSAFEINTENT = next((p / "shared" / "data" / "opensafeintent" for p in REPO.parents
                       if (p / "shared" / "data" / "opensafeintent" / "dataset.json").is_file()),
                      REPO.parent / "shared" / "data" / "opensafeintent")
CASEBENCH = next((p / "shared" / "data" / "casebench" / "CASEBench_data.json" for p in REPO.parents
                  if (p / "shared" / "data" / "casebench" / "CASEBench_data.json").is_file()),
                 REPO.parent / "shared" / "data" / "casebench" / "CASEBench_data.json")
