"""actrec's command line (installed as `actrec_cli`): thin Click commands over the library.

Command modules import click and rich only at the top; TensorFlow and the heavy parts of
the library are imported inside the command functions, so `actrec --help` stays fast.
"""
