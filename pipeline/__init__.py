"""boundlab: online-learning guarantees next to what the learners actually do."""

__version__ = "0.1.0"
