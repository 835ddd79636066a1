"""One package per feature, each with its request/response types, service, page and routes."""
