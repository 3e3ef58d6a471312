"""Training: distribution strategy, batch / learning-rate schedule, the custom loop,
checkpoints, the run (actrec.train.run) and batch probing (actrec.train.memory)."""
