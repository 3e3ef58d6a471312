"""What a run reads: the prepared data checked at start (training_data.py), the training
and validation pipelines of each batch phase (input_pipelines.py) and what validation reads
(validation.py)."""
