"""What a sweep leaves for a reader: ``tables`` (many small parquet tables gathered into one frame), ``plots``
(the figures) and ``report`` (the report across experiments). This ``__init__`` imports nothing."""
