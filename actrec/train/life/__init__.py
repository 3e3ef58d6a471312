"""The run's life around the loop: its epochs (epochs.py), where a run starts or resumes
(resume.py), checkpoints and best weights (checkpoint.py, best.py), divergence recovery and
fault injection (divergence.py, faults.py), metrics.jsonl / TensorBoard (metrics_log.py) and
what training records in run.json (run_record.py, through actrec.runs.record)."""
