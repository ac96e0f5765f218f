"""Whole-file ``predict`` (the tasks' ``predict_<task>`` functions) as the streaming predictor
over one file: the same reader, checks, chunks and output records as ``bertkit predict <task>``,
gathered into one text instead of written as they go. A task has one prediction path; only
inputs that cannot be streamed (CSV/TSV with quoted fields over several lines, a SQuAD JSON
document) are read whole by the task itself.
"""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from bertkit.predict.driver import StreamOptions, StreamPredictor, stream_predict


def predict_file(predictor: StreamPredictor, input_path: str, output: str | None = None,
                 console: Console | None = None, skip_bad_lines: bool = False) -> str:
    """The predictions of every record of ``input_path``, as one text (written atomically to
    ``output`` too when given).

    With ``skip_bad_lines`` an unreadable record gives no output record (whole-file ``predict``
    has always left it out; the streaming command writes a record saying it was skipped) and is
    named in one note on ``console``.

    Returns:
        the predictions' text, as the streaming command writes it to a file.

    Raises:
        BertkitError: an unreadable record (without ``skip_bad_lines``), no record at all, or
            whatever the task's predictor raises (:func:`bertkit.predict.stream_predict`).
    """
    from bertkit.io import write_text
    from bertkit.predict.shards import report_skipped

    out = io.StringIO()
    if skip_bad_lines:
        predictor = dataclasses.replace(predictor, skipped=lambda rec: None)
    summary = stream_predict(predictor, input_path, out,
                             StreamOptions(skip_bad_lines=skip_bad_lines), console)
    if console is not None:
        report_skipped(console, summary.skipped, input_path)
    text = out.getvalue()
    if output:
        write_text(output, text)
    return text
