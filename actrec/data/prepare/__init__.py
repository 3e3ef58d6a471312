"""Making a prepared folder (`actrec prepare`): videos -> shards of records + manifest.

dataset.py (`prepare_dataset`: the steps, resume and repair), plan.py (settings, plan
digest, output state, dry run), split.py (one split into shards), finish.py (final names,
report.json, manifest.json), encode_video.py (one video's records in a worker),
parallel.py (workers, results in order), shard_writer.py (appending records to a shard)
and repair.py (re-making damaged shards). Import names from these modules; this package
re-exports nothing.
"""
