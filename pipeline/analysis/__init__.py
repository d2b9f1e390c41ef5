"""Analysis tools: what studies the learners beside the runs and is never called by a job (so never part of a job's
identity). ``pep``: Pegasos' worst-case regret by performance estimation (docs/bounds.md section 4). This
``__init__`` imports nothing."""
