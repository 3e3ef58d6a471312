"""Training. The entry is actrec.train.run.train (what `actrec train` calls); the rest is in
rooms:

run.py          the entry: recipe + prepared data -> a run folder, read top to bottom
plan.py         the run's plan: the recipe decided once (requested, resumed, inherited,
                decided), the data checked, the folder judged, the starting point
schedule.py     the adaptive batch-size schedule and the learning rate that follows it
loop/           the step and the loop (DistributedTrainer, the optimizer, K-AVG)
life/           the run's life: epochs, resume, checkpoints, best, divergence, metrics, run.json
inputs/         the prepared data a run checks and the pipelines it reads
start/          starting points (`--init-from`) and the settings a start inherits
distillation/   distillation from a flow teacher (MARS)
memory/         batch_size "auto": probing memory and throughput

The workers and the cluster are actrec.cluster's."""
