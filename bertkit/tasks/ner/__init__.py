"""Named-entity recognition: IOB2 token classification over a BERT encoder, optional CRF."""

from bertkit.tasks import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, "NERConfig")
