"""Text and label spellings that print alike but differ in bytes.

* :func:`normalize_label`: every label bertkit reads (cls labels, relation labels, NER tag types)
  is NFC-normalised and stripped of surrounding white space, so ``"Uses "`` and ``"Uses"``, or
  ``"Protéine"`` with a precomposed ``é`` (NFC) and with ``e`` + combining accent (NFD), are one
  label, not two classes that print the same.
* :func:`visible`: a text with control characters (``Cc``), format characters (``Cf``: zero-width
  space, zero-width joiner, byte-order mark, soft hyphen) and white space removed; empty for a
  line that holds nothing a model could read (``predict`` flags such lines instead of labelling
  them).
* :func:`looks_alike`: the key under which two spellings look the same on screen (used to name a
  near-miss in "not among the labels" messages).
"""

from __future__ import annotations

import unicodedata


def normalize_label(label: str) -> str:
    """``label`` in Unicode NFC without surrounding white space.

    >>> normalize_label(" Prote\\u0301ine ") == "Prot\\u00e9ine"
    True
    """
    return unicodedata.normalize("NFC", label).strip()


def visible(text: str) -> str:
    """``text`` (NFC) without control, format (zero-width) or white-space characters.

    >>> visible("\\u200b \\u200d\\ufeff\\x07"), visible("a\\u200bb")
    ('', 'ab')
    """
    return "".join(ch for ch in unicodedata.normalize("NFC", text)
                   if not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf"))


def looks_alike(label: str) -> str:
    """A key equal for spellings that look alike: NFKC, case folded, invisible characters and
    white space removed.

    >>> looks_alike("Uses\\u200b") == looks_alike(" uses")
    True
    """
    return visible(unicodedata.normalize("NFKC", label)).casefold()
