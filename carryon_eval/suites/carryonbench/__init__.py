"""The CarryOnBench wing: the paper's conditions (record), their metrics (conditions) and the fidelity check
of the user simulator (fidelity); condition mc's contrasts with bc (intent) and their report sections and
leaderboard columns (intent_report)."""
