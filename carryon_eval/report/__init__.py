"""Reports: results.json, table.md, plots and report.html of one run (writer, plots, pages), and many runs side by
side (compare, compare_plots) with their leaderboard (leaderboard: columns, comparability groups, paired
differences; leaderboard_page: leaderboard.html, leaderboard.jsonl and the board's figures)."""
