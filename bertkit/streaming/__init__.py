"""``predict`` at corpus scale: a stream of records in bounded memory, resumable, sharded.

* :mod:`~bertkit.streaming.records`: plain text, JSON lines, CoNLL, CoNLL-U or CoNLL-2012
  documents (``.gz`` or not) as records with byte offsets; unreadable lines flagged, not fatal.
* :mod:`~bertkit.streaming.driver`: chunks, the task's per-chunk predictor, the ordered writer
  (``.gz`` out too), ``--resume``, ``--shard I/N``, ``--skip-bad-lines``.
* :mod:`~bertkit.streaming.sink`: the output written chunk by chunk (``.gz`` too).
* :mod:`~bertkit.streaming.state`: the state file (input and model identity, position).
* :mod:`~bertkit.streaming.merge`: shards into one output; ``--jobs N`` on one machine.
* :mod:`~bertkit.streaming.shards`: how a run goes: here, as ``--jobs N`` processes or as
  ``--executor`` jobs (:mod:`~bertkit.streaming.cluster`), then the merge.
* :mod:`~bertkit.streaming.whole`: whole-file ``predict`` (a task's ``predict_<task>``) as the
  same predictor over one file.
* :mod:`~bertkit.streaming.inputs`: what the tasks' predictors share (``auto`` formats, the
  check of a JSON-lines record).
* :mod:`~bertkit.streaming.progress`: sentences/s and ETA.

A task streams by giving a :class:`~bertkit.streaming.driver.StreamPredictor` (its model loaded
once; a chunk's records -> one output per record); the driver does the rest. It is the task's
one prediction path: the command line streams through it, and ``predict_<task>`` runs it over
one file.
"""

from bertkit.streaming.driver import (CHUNK_SIZE, StreamOptions, StreamPredictor, StreamSummary,
                                      parse_shard, shard_output, stream_predict)

__all__ = ["CHUNK_SIZE", "StreamOptions", "StreamPredictor", "StreamSummary", "parse_shard",
           "shard_output", "stream_predict"]
