"""boundlab's Hydra sweeper plugin (``hydra/sweeper=boundlab``, conf/config.yaml): :mod:`.boundlab_sweeper`."""
