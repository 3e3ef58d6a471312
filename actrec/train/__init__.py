"""Training: distribution strategy, batch / learning-rate schedule, the custom loop,
checkpoints (DESIGN.md §5)."""
