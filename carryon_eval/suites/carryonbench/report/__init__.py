"""CarryOnBench's outputs: its section summarized into results.json, its blocks of table.md and report.html (the
headline, the intent contrasts, the transcripts), its figures, its part of compare and of the leaderboard."""
