"""Training: batch / learning-rate schedule, the optimizer, the custom loop and its step,
checkpoints, divergence recovery and the run (actrec.train.run). The workers and the cluster
are actrec.cluster's; batch probing is actrec.train.memory's."""
