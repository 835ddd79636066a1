"""The guided walk-through of one head, step by step, on any lab state."""
