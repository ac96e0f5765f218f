"""Prediction: a saved model over new text, in bounded memory, resumable, sharded.

* :mod:`~bertkit.predict.inference`: length-sorted inference batches (several at once on a
  multi-core CPU); :mod:`~bertkit.predict.pruned_forward`: the encoder's forward without padding;
  :mod:`~bertkit.predict.onnx_backend`: ``--backend onnx``.
* :mod:`~bertkit.predict.records`: plain text, JSON lines, CoNLL, CoNLL-U or CoNLL-2012
  documents (``.gz`` or not) as records with byte offsets; unreadable lines flagged, not fatal.
* :mod:`~bertkit.predict.driver`: chunks, the task's per-chunk predictor, the ordered writer
  (``.gz`` out too), ``--resume``, ``--shard I/N``, ``--skip-bad-lines``.
* :mod:`~bertkit.predict.state`: the state file (input and model identity, position).
* :mod:`~bertkit.predict.merge`: shards into one output; ``--jobs N`` on one machine;
  :mod:`~bertkit.predict.cluster`: shards as jobs (``--executor``).
* :mod:`~bertkit.predict.progress`: sentences/s and ETA.

A task predicts by giving a :class:`~bertkit.predict.driver.StreamPredictor` (its model loaded
once; a chunk's records -> one output per record); the driver does the rest.
"""

from bertkit.predict.driver import (CHUNK_SIZE, StreamOptions, StreamPredictor, StreamSummary,
                                    parse_shard, shard_output, stream_predict)

__all__ = ["CHUNK_SIZE", "StreamOptions", "StreamPredictor", "StreamSummary", "parse_shard",
           "shard_output", "stream_predict"]
