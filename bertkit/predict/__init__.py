"""Prediction: a saved model over new text, in bounded memory, resumable, sharded.

* :mod:`~bertkit.predict.inference`: length-sorted inference batches (several at once on a
  multi-core CPU); :mod:`~bertkit.predict.pruned_forward`: the encoder's forward without padding;
  :mod:`~bertkit.predict.onnx_backend`: ``--backend onnx``.
* :mod:`~bertkit.predict.records`: plain text, JSON lines, CoNLL, CoNLL-U or CoNLL-2012
  documents (``.gz`` or not) as records with byte offsets; unreadable lines flagged, not fatal.
* :mod:`~bertkit.predict.driver`: chunks, the task's per-chunk predictor, the ordered writer
  (``.gz`` out too), ``--resume``, ``--shard I/N``, ``--skip-bad-lines``.
* :mod:`~bertkit.predict.sink`: the output written chunk by chunk (``.gz`` too).
* :mod:`~bertkit.predict.state`: the state file (input and model identity, position).
* :mod:`~bertkit.predict.merge`: shards into one output; ``--jobs N`` on one machine;
  :mod:`~bertkit.predict.cluster`: shards as jobs (``--executor``).
* :mod:`~bertkit.predict.shards`: how a run goes: here, as ``--jobs N`` processes or as
  ``--executor`` jobs (:mod:`~bertkit.predict.cluster`), then the merge.
* :mod:`~bertkit.predict.whole`: whole-file ``predict`` (a task's ``predict_<task>``) as the
  same predictor over one file.
* :mod:`~bertkit.predict.inputs`: what the tasks' predictors share (``auto`` formats, the
  check of a JSON-lines record).
* :mod:`~bertkit.predict.progress`: sentences/s and ETA.

A task predicts by giving a :class:`~bertkit.predict.driver.StreamPredictor` (its model loaded
once; a chunk's records -> one output per record); the driver does the rest. It is the task's
one prediction path: the command line streams through it, and ``predict_<task>`` runs it over
one file.
"""

from bertkit.predict.driver import (CHUNK_SIZE, StreamOptions, StreamPredictor, StreamSummary,
                                    parse_shard, shard_output, stream_predict)

__all__ = ["CHUNK_SIZE", "StreamOptions", "StreamPredictor", "StreamSummary", "parse_shard",
           "shard_output", "stream_predict"]
