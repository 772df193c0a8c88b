"""The ``rag`` command line: its commands (``main``), flags, ``rag doctor`` and ``rag eval``."""
