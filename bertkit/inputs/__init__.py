"""Inputs: turning encoded examples into the batches a model runs on.

* :mod:`~bertkit.inputs.batching`: length-sorted batches.
* :mod:`~bertkit.inputs.lengths`: an encoder's position limit and the length checks against it.
* :mod:`~bertkit.inputs.packing`: several short sentences packed into one row (planned in the
  prefetch worker; shape buckets on CUDA).
* :mod:`~bertkit.inputs.windowing`: long documents as overlapping windows of word pieces.
"""
