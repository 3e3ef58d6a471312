"""`python -m actrec.memory`: the probe process (actrec.memory.probe_process)."""

from actrec.memory.probe_process import probe_main

probe_main()
