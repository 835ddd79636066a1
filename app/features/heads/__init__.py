"""Several heads, grouped-query attention, position made visible and the √d_k panel."""
