"""Reports: the report phase's frame of one run (phase; results_file: results.json's envelope, notes and status;
html: report.html's page; pages, tables), many runs side by side (compare) with their leaderboard (leaderboard:
columns, comparability groups, paired differences; leaderboard_page: leaderboard.html and leaderboard.jsonl), and
the drawing helpers every suite's figures use (plots). What a suite reports and draws is its wing's, reached
through its SuiteReport's hooks, the same for every suite."""
