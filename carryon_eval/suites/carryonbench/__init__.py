"""The CarryOnBench wing: the paper's conditions (conditions) and its record (record); its judgment records
(judgment_records) and files (judgments); their metrics: the conversations and their values
(conversations), the unscored rule and its estimates (unscored), the breakdowns (breakdowns) and results.json's
numbers (summary); the calibration of grouped Ben-Util (calibration); its report section's hooks (report: its
numbers, notes, status word and rows of conversation_scores.jsonl; table: table.md's Table 2 and compare's; page:
its report.html section and transcripts), its figures of one run, of several and of the leaderboard (plots,
compare_plots, board_plots), its part of `compare` (compare) and its leaderboard columns (leaderboard); the
fidelity check of the user simulator (fidelity); condition mc's contrasts with bc (intent) and their report
sections and leaderboard columns (intent_report)."""
