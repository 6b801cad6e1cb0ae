"""The options of ``bayes-risk fit`` that the built-in models declare, one module per family,
registered in the entry-point group ``bayes_risk.fit_options``: each a table
``{setting: cli_option(...)}`` of the model's ``__init__`` settings, the one form of every
command-line option (``bayes_risk._specs``); they import no model, so the parser is built
without importing one.
"""
