"""The one reader of a saved model's settings: what ``finetune <task>`` wrote into the
``bertkit.json`` beside the model's weights (:data:`bertkit.tasks.common.META_FILE`) and what
``evaluate``, ``predict`` and the streaming predictors read back: its ``max_length`` and the
task's decoding settings, each with its ONE default here (a model saved before a setting existed
reads that default), each value checked.

>>> s = saved_settings({"task": "qa", "path": "run/model", "max_length": 256})
>>> s.max_length, s.doc_stride, saved_settings({"task": "ner"}).max_length
(256, 128, 512)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertkit.errors import BertkitError
from bertkit.tasks.common import META_FILE

MAX_LENGTH = {"qa": 384, "coref": 384, "sim": 256}
"""A task's default ``max_length`` (pieces) where its config's is not 512 (SQuAD's 384, as
Hugging Face's ``run_qa.py``; coreference as Lee et al. 2018's segments; 256 for sentence pairs,
sentence-transformers' own)."""
DEFAULT_MAX_LENGTH = 512


@dataclass(frozen=True)
class SavedSettings:
    """A saved model's settings, typed, with their defaults.

    Attributes:
        file: the ``bertkit.json`` read (named in messages).
        task: the task that saved it.
        max_length: pieces per window the model was trained with (:data:`MAX_LENGTH`).
        doc_stride, max_question_length, n_best, max_answer_length: extractive QA's windows
            and answer search, in pieces (Devlin et al. 2019, section 4.2; ``run_qa.py``'s
            defaults).
        null_threshold: SQuAD 2.0's no-answer threshold (a logit difference).
        unanswerable: trained with unanswerable questions (SQuAD 2.0 mode).
        decoder, word_repr: the dependency parser's tree decoder and word vector.
        long_text: the classifier's treatment of texts over ``max_length``.
        multi_label: a multi-label classifier.
        singletons: coreference keeps predicted singleton mentions (``on``/``off``).
        architecture: ``bi-encoder`` for a sentence-transformers similarity model, else None.
        negative_label: relation extraction's "no relation" label, left out of its micro
            scores (None: none).
    """

    file: Path
    task: str
    max_length: int
    doc_stride: int = 128
    max_question_length: int = 64
    n_best: int = 20
    max_answer_length: int = 30
    null_threshold: float = 0.0
    unanswerable: bool = False
    decoder: str = "mst"
    word_repr: str = "first"
    long_text: str = "head-tail"
    multi_label: bool = False
    singletons: str = "on"
    architecture: str | None = None
    negative_label: str | None = None

    def fitted_length(self, config: Any, console: Any = None) -> int:
        """``max_length`` within the encoder's position limit (:func:`bertkit.inputs.lengths.fit_length`,
        which says so on ``console`` when it cuts)."""
        from bertkit.inputs.lengths import fit_length, position_limit

        return fit_length(self.max_length, position_limit(config), console)


_EXPECTED = {int: "a whole number of at least 1", float: "a number",
             bool: "true or false", str: "a string"}


def _kind(field: dataclasses.Field) -> type:
    name = str(field.type)
    return int if name == "int" else float if name == "float" else bool if name == "bool" else str


def _checked(key: str, value: Any, kind: type, file: Path) -> Any:
    """``value`` of ``key`` as ``kind`` (an ``int`` is a float too).

    Raises:
        BertkitError: naming ``file`` and ``key``: a value of another type, a length under 1,
            a number that is not finite.
    """
    ok = (isinstance(value, bool) if kind is bool else
          isinstance(value, int) and not isinstance(value, bool) and value >= 1 if kind is int
          else isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value) if kind is float else isinstance(value, str))
    if not ok:
        raise BertkitError(f"the saved setting '{key}' is {value!r}", file=file,
                           expected=f"{_EXPECTED[kind]} for '{key}' (the model's {file.name} "
                                    f"as finetune wrote it)")
    return float(value) if kind is float else value


def saved_settings(meta: dict, task: str | None = None) -> SavedSettings:
    """The settings of a saved model from its meta (the dict a task's loader returns:
    :func:`bertkit.tasks.common.find_saved_model`, with its folder as ``path``). A missing key,
    or one saved as null, reads its default.

    Args:
        task: the task whose defaults apply (None: the meta's ``task``).

    Raises:
        BertkitError: a value of the wrong kind (a ``max_length`` of ``"long"`` or ``0``),
            naming the file and the key.
    """
    file = Path(meta.get("path") or ".") / META_FILE
    task = task or str(meta.get("task") or "")
    given: dict[str, Any] = {"max_length": MAX_LENGTH.get(task, DEFAULT_MAX_LENGTH)}
    for field in dataclasses.fields(SavedSettings)[2:]:
        value = meta.get(field.name)
        if value is not None:
            given[field.name] = _checked(field.name, value, _kind(field), file)
    return SavedSettings(file, task, **given)
