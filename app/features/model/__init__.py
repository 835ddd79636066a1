"""A real trained model (all-MiniLM-L6-v2) run in numpy, its heads shown like the lab's."""
