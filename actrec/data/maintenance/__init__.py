"""Tools over an existing prepared folder.

inspect.py (`actrec inspect`: summary, problems, contact sheets), contact_sheet.py (the
PNG of a video's frames and flow), migrate.py (format 1 -> format 2) and format1.py (the
format-1 reader). Import names from these modules; this package re-exports nothing.
"""
