"""Coreference resolution: a start-to-end span-ranking model (Kirstain et al., 2021, of the Lee
et al. 2017/2018 family) over a BERT encoder run on independent segments (Joshi et al., 2019),
CoNLL-2012 input and output, the reference scorer's MUC, B-cubed, CEAF and CoNLL F1."""

from bertkit.tasks import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, "CorefConfig")
