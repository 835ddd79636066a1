"""What every page that shows one head shares: the stage types, the query breakdown and the
stage strip's view."""
