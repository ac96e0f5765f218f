"""Decoders: constrained Viterbi for tag sequences (viterbi), maximum spanning trees with one
root (mst, Chu-Liu/Edmonds) and projective trees (eisner)."""

from bertkit.decoding.viterbi import viterbi_decode

__all__ = ["viterbi_decode"]
