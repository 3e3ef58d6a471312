"""A probe on frozen features (`train.probe: linear`): the backbone's clip features computed
once per clip view of the prepared data and cached, a linear head trained on them, the
run's final weights the backbone with that head.

cache_key.py      what a cached feature set depends on: the backbone (its weights and
                  network), the view, the prepared split's content (CacheKey)
feature_cache.py  RUN/feature_cache/KEY/SPLIT.npz + SPLIT.json: written atomically, checked
                  against its key and its SHA-256 before it is used
features.py       the slow pass: every view of a split through the backbone, with progress
head.py           the linear head trained on the cached features, whole epochs as array ops
probe_run.py      `train` of a probe run: the cache, the head, the final weights, run.json
"""
