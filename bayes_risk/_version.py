"""The package's version, in a module of its own: the command line and the audit report read it
without importing the package's public names (``bayes_risk/__init__.py``)."""

__version__ = "0.1.0"
