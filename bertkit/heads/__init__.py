"""Model heads: the linear-chain CRF (span-boundary, biaffine and relation heads come later)."""

from bertkit.heads.crf import LinearChainCRF

__all__ = ["LinearChainCRF"]
