"""The built-in synthetic motion dataset.

dataset.py (`generate_synthetic_dataset`, recognising and checking a generated folder),
config.py (its settings and classes), render.py (the moving-pattern clips) and
video_writer.py (writing a video file atomically). Import names from these modules; this
package re-exports nothing.
"""
