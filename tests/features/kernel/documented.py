"""Check an answer against the schema /docs shows for it (the OpenAPI document)."""

import jsonschema
from fastapi.testclient import TestClient


def check_documented(client: TestClient, path: str, body: object, method: str = "post") -> str:
    """Validate `body` against the 200 answer documented for `method path`; return the name
    of the documented type."""
    spec = client.get("/openapi.json").json()
    response = spec["paths"][path][method]["responses"]["200"]
    ref = response["content"]["application/json"]["schema"]["$ref"]
    jsonschema.validate(body, {"$ref": ref, "components": spec["components"]})
    return ref.rsplit("/", 1)[-1]
