"""The OpenAPI schema drives these tests, so every endpoint added later is covered:
schemathesis sends generated valid and invalid requests (no 5xx, answers match the schema),
and every input field the schema describes has a size limit."""

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from tests.routes import APP

EXAMPLES_PER_OPERATION = 20
# What is checked: no 5xx, every status documented, every answer within its schema, and its
# content type and headers. Two checks about *which* input is accepted are off, because the
# app is deliberately looser and stricter than a schema can say: cross-field rules (x
# against W_Q, the server's limits) refuse schema-valid input with a documented 422, and a
# blank form field (`window=`) counts as a field left out, which the schema calls invalid.
# An answer may take longer than schemathesis' 10 s on a loaded machine (/api/cost/measure
# times the head at several lengths): it waits up to a minute, ending as soon as it comes.
CONFIG = SchemathesisConfig.from_dict(
    {
        "request-timeout": 60,
        "checks": {
            "negative_data_rejection": {"enabled": False},
            "positive_data_acceptance": {"enabled": False},
        },
    }
)


@pytest.fixture(scope="module")
def api_schema() -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", APP, config=CONFIG)


# Loaded when the tests run, not when pytest collects them: schemathesis builds each
# operation's boundary cases as it makes its test, about 14 s of CPU, which every pytest
# process (each xdist worker too) paid at collection. Several tests, so that the workers
# share the operations: the slowest ones have a test each (one test held a worker for 392 s
# while the other ran out of work); each operation is still a subtest of its own.
schema = schemathesis.pytest.from_fixture("api_schema")
MODELS = "^/api/(model|decoder)"  # the trained models' endpoints: the slowest answers
HEADS = "^/api/heads"
ATTENTION = "^/api/attention"
KERNEL = "^/api/kernel"
OWN_TEST = "|".join((MODELS, HEADS, ATTENTION, KERNEL))
SETTINGS = settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


@schema.exclude(path_regex=OWN_TEST).parametrize()
@SETTINGS
def test_every_endpoint_answers_within_its_schema(case: schemathesis.Case) -> None:
    case.call_and_validate()


@schema.include(path_regex=HEADS).parametrize()
@SETTINGS
def test_the_heads_endpoints_answer_within_their_schema(case: schemathesis.Case) -> None:
    case.call_and_validate()


@schema.include(path_regex=ATTENTION).parametrize()
@SETTINGS
def test_the_attention_endpoints_answer_within_their_schema(case: schemathesis.Case) -> None:
    case.call_and_validate()


@schema.include(path_regex=KERNEL).parametrize()
@SETTINGS
def test_the_kernel_endpoints_answer_within_their_schema(case: schemathesis.Case) -> None:
    case.call_and_validate()


@schema.include(path_regex=MODELS).parametrize()
@SETTINGS
def test_the_models_endpoints_answer_within_their_schema(case: schemathesis.Case) -> None:
    case.call_and_validate()


def input_schemas(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, schema) for every request body and query parameter, refs resolved."""
    found = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            for param in op.get("parameters", []):
                found.append((f"{method} {path} ?{param['name']}", param["schema"]))
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                found.append((f"{method} {path} body", body["schema"]))
    return found


def unbounded(where: str, node: Any, spec: dict[str, Any], seen: set[str]) -> list[str]:
    """Strings without maxLength and arrays without maxItems anywhere inside `node`."""
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in unbounded(where, item, spec, seen)]
    if not isinstance(node, dict):
        return []
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return []
        seen.add(name)
        return unbounded(f"{where} → {name}", spec["components"]["schemas"][name], spec, seen)
    problems = []
    kind = node.get("type")
    if kind == "string" and "maxLength" not in node and "enum" not in node:
        problems.append(f"{where}: string without maxLength")
    if kind == "array" and "maxItems" not in node and "prefixItems" not in node:
        problems.append(f"{where}: array without maxItems")
    for key, child in node.items():
        if key in ("properties", "$defs"):
            for name, sub in child.items():
                problems += unbounded(f"{where}.{name}", sub, spec, seen)
        elif isinstance(child, dict | list) and key not in ("examples", "default", "example"):
            problems += unbounded(where, child, spec, seen)
    return problems


def test_every_input_field_has_a_size_limit() -> None:
    spec = APP.openapi()
    assert "post /api/attention body" in [where for where, _ in input_schemas(spec)]
    problems = [
        p for where, node in input_schemas(spec) for p in unbounded(where, node, spec, set())
    ]
    assert problems == []
