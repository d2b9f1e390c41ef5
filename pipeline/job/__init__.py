"""One job: what it is and what it does.

``config`` (a Hydra config becomes a :class:`~pipeline.job.config.Job`), ``run`` (the one run loop: prepare,
present, learn, ask the statistics for what the bounds require, evaluate), ``statistics`` (the providers: where
a run meets the solvers), ``identity`` (its config key, the source it runs, its input files), ``markers`` (what
"done" means), ``store`` (the job store: a finished job reused by another sweep) and ``locks`` (which process
holds a job). This ``__init__`` imports nothing, so importing a member never runs the others.
"""
