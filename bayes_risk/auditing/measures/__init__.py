"""The package's measures, one module each: a measure's audit step, its verdict lines and its
report sections together, and its registry entry naming them, ``MEASURE``, which
:func:`bayes_risk.measures.measures` lists (:doc:`/adding_a_measure`)."""
