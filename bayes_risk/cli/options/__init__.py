"""The options of ``bayes-risk fit`` that the built-in models declare, one module per family,
registered in the entry-point group ``bayes_risk.fit_options``; they import only
:mod:`bayes_risk.registry`, so the parser is built without importing a model.
"""
