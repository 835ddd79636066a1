"""The ASGI layers that wrap every request: cache, size limits, request log, security headers."""
