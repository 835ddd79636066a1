"""The deployment examples match what the app serves: ports, probe paths, settings names."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text()
MANIFESTS = list(yaml.safe_load_all((ROOT / "deploy/kubernetes/attention-lab.yaml").read_text()))
COMPOSE = yaml.safe_load((ROOT / "deploy/compose.yaml").read_text())


def kind(name: str) -> dict[str, Any]:
    [doc] = [d for d in MANIFESTS if d["kind"] == name]
    return doc


def container() -> dict[str, Any]:
    [c] = kind("Deployment")["spec"]["template"]["spec"]["containers"]
    return c


def settings_from(env: dict[str, str]) -> Settings:
    """The settings the app would read from this environment; unknown names are errors."""
    unknown = {k for k in env if k.lower() not in Settings.model_fields}
    assert unknown == set(), f"not settings of the app: {unknown}"
    return Settings(**{k.lower(): v for k, v in env.items()})


def dockerfile_env() -> dict[str, str]:
    """The ENV of the final (runtime) stage."""
    runtime = DOCKERFILE.rsplit("\nFROM ", 1)[1]
    block = re.search(r"^ENV (.*?)(?=^\S)", runtime, re.M | re.S).group(1)
    return dict(re.findall(r"(\w+)=(\S+)", block))


def test_the_image_listens_where_it_says() -> None:
    port = int(dockerfile_env()["PORT"])
    assert re.search(rf"^EXPOSE {port}$", DOCKERFILE, re.M)
    assert dockerfile_env()["HOST"] == "0.0.0.0"


def test_the_deployment_serves_on_its_declared_port() -> None:
    c = container()
    env = {e["name"]: e["value"] for e in c["env"]}
    settings = settings_from(env)
    [port] = c["ports"]
    assert port["containerPort"] == settings.port == int(dockerfile_env()["PORT"])
    assert settings.host == "0.0.0.0"


@pytest.mark.parametrize("probe", ["readinessProbe", "livenessProbe"])
def test_probes_ask_a_path_the_app_answers_on_the_serving_port(
    client: TestClient, probe: str
) -> None:
    c = container()
    get = c[probe]["httpGet"]
    assert get["port"] in {p["name"] for p in c["ports"]} | {p["containerPort"] for p in c["ports"]}
    assert client.get(get["path"]).status_code == 200


def test_the_service_routes_to_the_container_port() -> None:
    service, deployment = kind("Service"), kind("Deployment")
    assert (
        service["spec"]["selector"].items()
        <= deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    names = {p["name"]: p["containerPort"] for p in container()["ports"]}
    for port in service["spec"]["ports"]:
        assert port["targetPort"] in names or port["targetPort"] in names.values()


def test_the_pods_run_as_the_images_user() -> None:
    uid = int(re.search(r"^USER (\d+)", DOCKERFILE, re.M).group(1))
    assert kind("Deployment")["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == uid


def test_compose_publishes_the_port_the_app_serves_and_uses_the_images_health_check() -> None:
    service = COMPOSE["services"]["attention-lab"]
    settings = settings_from(service["environment"])
    [mapping] = service["ports"]
    assert int(mapping.split(":")[-1]) == settings.port
    healthcheck = re.search(r"HEALTHCHECK .*?CMD (\[.*?\])", DOCKERFILE, re.S).group(1)
    assert service["healthcheck"]["test"] == ["CMD", *json.loads(healthcheck)]
