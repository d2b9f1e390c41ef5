"""Judging: what the runs conclude about the bounds.

``rows``: one run against one bound (the row's verdict columns) and the intervals every verdict quotes;
``columns``: the results row declared once; ``guarantees``: the guarantee types as records. These are what a
job computes with, and so part of its identity. ``verdicts`` (the sweep-level rules: settings, seeds, claims)
and ``limits`` (its betting tests) judge a sweep from its tables: no job imports them, so editing them reuses
every finished job. This ``__init__`` imports nothing, so importing a member never runs the others.
"""
