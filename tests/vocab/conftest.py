"""Small hand-made corpora for the vocabulary tests (written to tmp_path, built in milliseconds)."""

from __future__ import annotations

import pytest

SCIENCE = [
    "The protein was incubated at 37 °C for 2 h in 5 µM buffer .",
    "α-synuclein and β-amyloid aggregates were detected by immunohistochemistry .",
    "Phosphorylation of the kinase increased by 40 % ( p < 0.05 ) .",
    "The wavelength λ = 450 nm and the resistance Ω were measured at 25 °C .",
    "Δ G of binding was −3.2 kJ / mol ; the angle θ was 30 ° .",
    "Café owners in Zürich reported naïve results about the résumé .",
    "Mitochondrial dysfunction causes neurodegeneration in Parkinson disease .",
    "We trained a convolutional network with stochastic gradient descent .",
    "Immunohistochemistry showed phosphorylation of synuclein in neurons .",
    "The µm scale structures were imaged with a confocal microscope at 488 nm .",
]


@pytest.fixture
def corpus_file(tmp_path):
    """A ~2,000-line corpus of scientific sentences with Greek letters and unit symbols."""
    path = tmp_path / "corpus.txt"
    lines = [f"{s} Sample {i % 50} ." for i in range(200) for s in SCIENCE]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
