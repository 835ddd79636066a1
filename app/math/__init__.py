"""Pure numpy: the mathematics of attention, one module per idea.

Imports nothing else of the app."""
