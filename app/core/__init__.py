"""What every feature shares without the web: error types, limits, rules, formatting, language."""
