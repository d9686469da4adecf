"""The application layer: one async function per command (commands), the records they run with (config), one
command's endpoints and embedded model (session), the phases they order (phases), the cost table (cost) and the
pipelining of rollout into judging (pipeline). The CLI calls this layer and nothing below it."""
