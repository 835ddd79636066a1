"""Shared web plumbing the features use: dependencies, error handlers, JSON in and out,
templating, figures, assets, middleware."""
