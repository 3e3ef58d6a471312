"""Training runs on disk (each name imported from its module):

folder.py     the run folder `actrec train` writes: its file names, weights saved atomically
record.py     run.json typed (RunRecord, each field's origin): its one reader and writer
trained.py    a finished run read back (recipe, classes, weights) and its model rebuilt,
              for evaluation, export and fine-tuning
"""
