"""Reports: results.json, table.md, plots and report.html of one run (writer, plots, pages), and many runs side by
side (compare, compare_plots)."""
