"""CarryOnBench's numbers: pure functions from judged conversations to the section's records (the headline per
condition, Recovery%, the clarification effect, the breakdowns, the intent contrasts, power, fidelity)."""
