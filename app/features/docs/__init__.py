"""/docs: the OpenAPI document drawn by Swagger UI, served from this server."""
