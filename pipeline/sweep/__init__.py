"""The sweep's machinery: from the command's jobs to their lines in the log.

``stages`` (one Hydra job's lifecycle), ``pack`` (many settings per Hydra job), ``callbacks`` (a sweep's start
and end), ``preflight`` (every job composed and validated before any starts), ``context`` (the sweep a job
belongs to), ``hydra_seam`` (the one seam to Hydra's private internals), ``schemas`` (config schemas from the
code), ``explain`` (``--help`` and ``--explain``), ``ray_worker``, ``interrupts`` (Ctrl-C and SIGTERM) and
``progress``. This ``__init__`` imports nothing, so importing a member never runs the others.
"""
