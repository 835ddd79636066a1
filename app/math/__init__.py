"""Pure numpy: the mathematics of attention, one module per idea; imports nothing else of the app."""
