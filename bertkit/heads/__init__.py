"""Model heads: linear-chain CRF (crf), span-boundary objective (sbo), relation pooling
(relation) and the biaffine parser head (biaffine); import each from its module."""

from bertkit.heads.crf import LinearChainCRF

__all__ = ["LinearChainCRF"]
