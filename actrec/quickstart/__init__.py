"""`actrec quickstart` as a library (each name imported from its module):

stages.py     the whole pipeline on the built-in synthetic set, stage by stage
              (`run_quickstart`, its sizes and stages)
reuse.py      what a second quickstart in the same folder keeps instead of redoing
"""
