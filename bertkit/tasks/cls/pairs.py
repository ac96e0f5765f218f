"""Sentence pairs or single texts: a cls set's splits must be of one form, and a saved
classifier (``pairs`` in its ``bertkit.json``) is scored and run only on records of the form it was
trained on; either mix is otherwise a silent wrong answer."""

from __future__ import annotations

from bertkit.errors import BertkitError
from bertkit.tasks.cls.examples import Columns, TextExample


def pair_form_problem(example: TextExample, pairs: bool | None, cols: Columns) -> str | None:
    """Why ``example`` does not suit a model trained on sentence pairs (``pairs`` True) or on
    single texts (False), or None (also for a model saved before bertkit recorded it: None):
    scoring a pair model on single texts, or the reverse, is a silent wrong answer."""
    if pairs is None or example.empty:
        return None
    if pairs and not example.text_pair:
        return (f"no pair text '{cols.pair}', but the model was trained on sentence pairs "
                f"(text + {cols.pair})")
    if not pairs and example.text_pair:
        return (f"a pair text '{cols.pair}', but the model was trained on single texts (it "
                f"would read the pair as part of the input)")
    return None


def check_pair_form(examples: list[TextExample], pairs: bool | None, cols: Columns,
                    expected: str) -> None:
    """Refuse the first example that does not suit the model's form
    (:func:`pair_form_problem`).

    Raises:
        BertkitError: naming its file and line.
    """
    for ex in examples:
        problem = pair_form_problem(ex, pairs, cols)
        if problem:
            raise BertkitError(problem, file=ex.file, line=ex.line, expected=expected)


def _same_form(out: dict, sources: dict, cols: Columns) -> None:
    """Refuse splits of which some are sentence pairs and others single texts: a model trained
    on pairs scored on single texts (or the reverse) is a silent wrong answer.

    Raises:
        BertkitError: naming the file without pairs, and a line of the other file with one.
    """
    with_pair = {s: next((ex for ex in exs if ex.text_pair), None) for s, exs in out.items()}
    paired = [s for s, ex in with_pair.items() if ex is not None]
    single = [s for s, ex in with_pair.items() if ex is None]
    if paired and single:
        ex = with_pair[paired[0]]
        raise BertkitError(
            f"the {single[0]} file has no pair text '{cols.pair}' in any record, but the "
            f"{paired[0]} file is of sentence pairs ({ex.file}:{ex.line} has one): the splits "
            f"must be of one form", file=sources[single[0]],
            expected=f"a '{cols.pair}' field in every split's records, or in none")
