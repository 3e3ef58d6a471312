"""The step and the loop: DistributedTrainer (trainer.py; `build_trainer` makes one from a
recipe), one training step top to bottom (step.py), the optimizer and its per-parameter
rates (optimizer.py, param_groups.py), K-AVG's averaging (averaging.py) and a batch's loss
statistics (step_statistics.py). It knows nothing of run folders or epochs."""
