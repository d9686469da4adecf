"""The triplet suite: benign / ambiguous / malicious prompt-sets (prompt_sets), their pure metrics, the
response-mode judge, the risk-recognition probe and the report section."""
