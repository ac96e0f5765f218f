"""bertkit: build domain-adapted BERT models (SciBERT / SpanBERT style) from one command-line tool.

Layout: ``data/`` readers and the dataset registry, ``heads/`` model heads (CRF), ``decoding/``
decoders (constrained Viterbi), ``metrics/`` scores, ``tasks/`` one module per task, ``training/``
the shared training core (imports no task), ``cli/`` a thin Typer layer over importable functions.
"""

__version__ = "0.1.0"
