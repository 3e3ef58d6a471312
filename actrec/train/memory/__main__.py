"""`python -m actrec.train.memory`: the probe process (actrec.train.memory.probe_process)."""

from actrec.train.memory.probe_process import probe_main

probe_main()
