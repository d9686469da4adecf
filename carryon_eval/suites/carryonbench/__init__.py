"""The CarryOnBench wing, by concern: its declaration at the top (record: the suite record; conditions; options;
settings; dataset_support; cost; section: its section's record); metrics/ (its numbers: the conversations and their
values, the unscored rule and its estimates, the headline, the breakdowns, the mc contrasts, calibration, fidelity,
power); judging/ (its scorers, their judgment records and files, the verdict arrays the report reads); report/ (its
section summarized, its blocks of table.md and report.html, its figures, its parts of `compare` and of the
leaderboard); inspect_eval/ (its inspect-ai task and log scores); human/ (its validation against people)."""
