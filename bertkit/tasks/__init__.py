"""Tasks: each turns its data into batches, builds a model and computes its metrics.

The training core (``bertkit.training``) imports no task; tasks compose over it.
"""
