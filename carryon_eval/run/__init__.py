"""The run folder: its files and their paths (folder) and the typed records written to it (records)."""
