"""The package's measures, one module each: a measure's audit step, its verdict lines and its
report sections together, next to its registry entry (:doc:`/adding_a_measure`)."""
