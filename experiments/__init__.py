"""Code that runs a model to measure it: head importance, pruning tasks and timing, KV-cache timing."""
