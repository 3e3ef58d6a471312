"""Reading prepared data for training and evaluation (tf.data).

pipeline.py (`build_dataset`: training and evaluation batches), views.py (multi-view
test inputs), clip_spec.py (what a clip is; the prepared folder's classes and videos),
clips.py (THE evaluation clip, also the export's serving crops), training_clips.py (the
training clip), clip_reading.py (the records a clip reads), sampling.py (frame indices),
order.py (example order, resume by position), augment.py (crops, flips, normalisation)
and holdout.py (the validation videos held out of training). Import names from these
modules; this package re-exports nothing.
"""
