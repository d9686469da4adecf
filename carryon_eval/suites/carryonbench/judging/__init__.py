"""CarryOnBench's judging: its scorers (Ben-Util per item and grouped, the rubric utility, harm), their judgment
files and the per-reply verdict arrays the report reads."""
