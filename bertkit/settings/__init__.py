"""Settings: how a command's options are declared, layered and written down.

* :mod:`~bertkit.settings.options`: a command's options declared once, as plain data.
* :mod:`~bertkit.settings.layers`: dataclass configs built from layers (built-in defaults, a
  recipe file, the command line), checked, and written as ``config.yaml``.
* The one settings builder of every command that trains (it reads the task table) sits above
  the tasks: :mod:`bertkit.workflows.command_settings`.
* :mod:`~bertkit.settings.recipe_files`: the YAML behind ``--recipe`` and ``bertkit run``.
"""
