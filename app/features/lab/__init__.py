"""The head lab: one attention head on the learner's own tokens, vectors, projections and mask."""
