"""Decoders: constrained Viterbi for tag sequences (MST/Eisner for trees come with parsing)."""

from bertkit.decoding.viterbi import viterbi_decode

__all__ = ["viterbi_decode"]
