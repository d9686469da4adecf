"""The CarryOnBench wing: the paper's conditions (record), their metrics (conditions) and the fidelity check
of the user simulator (fidelity)."""
