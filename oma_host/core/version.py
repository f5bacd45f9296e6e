"""The package version, in a module of its own so that anything (the
``initialize`` answer, the ACP bridge's ``clientInfo``, pyproject's dynamic
version) can read it without importing anything else."""

__version__ = "0.1.0"
