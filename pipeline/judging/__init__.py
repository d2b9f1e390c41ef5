"""Judging: what the runs conclude about the bounds.

``pipeline.judging.rows``: one run against one bound (the row's verdict columns) and the intervals every
verdict quotes; what a job computes with, and so part of its identity. The sweep-level rules (settings,
seeds, claims) are ``pipeline.verdicts`` and its betting tests ``pipeline.limits``: no job imports them.
This ``__init__`` imports nothing, so importing a member never runs the others.
"""
