"""`python -m actrec.train.memory`: the probe process (actrec.train.memory.probe_process),
which declines the optional imports of TensorFlow and Keras as the console script does (the
training it measures for starts that way: actrec.cluster.optional_imports)."""

from actrec.cluster.optional_imports import decline_optional_imports

decline_optional_imports()

from actrec.train.memory.probe_process import probe_main  # noqa: E402  (after the finder)

probe_main()
