"""Outputs: what a run leaves for people to read.

* :mod:`~bertkit.outputs.tables`: the rich result tables of every task and command.
* :mod:`~bertkit.outputs.plots`: curves and figures (PNG, written atomically).
* :mod:`~bertkit.outputs.modelcard`: a saved model's ``README.md`` card.
* :mod:`~bertkit.outputs.provenance`: versions, commit and data behind a result.
* :mod:`~bertkit.data.lineage`: an encoder's lineage, carried in its own folder.
"""
