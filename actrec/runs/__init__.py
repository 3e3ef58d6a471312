"""Training runs on disk (each name imported from its module):

folder.py     the run folder `actrec train` writes: its file names, run.json's reader
              and writer, weights saved atomically
trained.py    a finished run read back (recipe, classes, weights) and its model rebuilt,
              for evaluation, export and fine-tuning
"""
