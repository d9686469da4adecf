"""The application layer: one async function per command (commands), the cost table (cost) and the pipelining of
rollout into judging (pipeline). The CLI calls this layer and nothing below it."""
