"""Build the image for real and check it through HTTP: `make container-test`.

No registry image can be pulled here, so the base is bootstrapped from Debian's packages with
mmdebstrap (python3 and its venv module) and imported as a local image. buildah builds the
Dockerfile with `--isolation chroot`, passing the machine's CA bundle to pip as a build
secret. The container is started with `podman run` where that works, else `buildah run`
(chroot isolation, the host's network); then /healthz, the image's own HEALTHCHECK command,
the worked example and the security headers are checked, and the figures printed.

Exit status: 0 when every check passed; 1 when one failed; 3 when the tools are missing and
cannot be installed (the Makefile reports that clearly instead of failing `make test`).
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "localhost/attention-lab:container-test"
SUITE = "bookworm"
BASE_PACKAGES = "python3,python3-venv"
BASE = f"localhost/attention-lab-base:{SUITE}-minbase"
CA_BUNDLE = os.environ.get("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt")
TOOLS = {"buildah": "buildah", "podman": "podman", "mmdebstrap": "mmdebstrap"}
MISSING_TOOLS = 3


def sh(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, text=True, capture_output=True, **kw)


def step(label: str, started: float) -> float:
    now = time.monotonic()
    print(f"  {label}: {now - started:.1f} s", flush=True)
    return now


def ensure_tools() -> None:
    missing = [pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None]
    if not missing:
        return
    print(f"installing {' '.join(missing)} from Debian's packages", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    try:
        sh(*sudo, "apt-get", "update", "-qq", env=env)
        sh(*sudo, "apt-get", "install", "-y", "-qq", *missing, "uidmap", env=env)
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        print(f"container-test: cannot install {' '.join(missing)}: {detail.strip()[-400:]}")
        sys.exit(MISSING_TOOLS)


def ensure_base() -> str:
    """The Debian base image, bootstrapped once and kept in local storage."""
    if sh("buildah", "inspect", "--type", "image", BASE, check=False).returncode == 0:
        return "cached"
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "base.tar"
        sh(
            "mmdebstrap",
            "--variant=minbase",
            f"--include={BASE_PACKAGES}",
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/locale/*",
            "--dpkgopt=path-exclude=/usr/share/info/*",
            SUITE,
            str(tar),
        )
        sh("podman", "import", str(tar), BASE)
    return "bootstrapped with mmdebstrap"


def build() -> None:
    sh(
        "buildah",
        "build",
        "--isolation",
        "chroot",
        "--format",
        "docker",
        "--layers",
        "--secret",
        f"id=pipcert,src={CA_BUNDLE}",
        "--build-arg",
        f"BASE_IMAGE={BASE}",
        "-t",
        IMAGE,
        str(ROOT),
    )


def image_config() -> dict:
    out = sh("buildah", "inspect", "--type", "image", IMAGE).stdout
    return json.loads(out)["Docker"]["config"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, body: bytes | None = None) -> tuple[int, dict, bytes]:
    headers = {"content-type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=5) as r:
        return r.status, dict(r.headers), r.read()


def wait_healthy(base: str, server: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the container exited: {server.stdout.read()[-2000:]}")
        try:
            if get(f"{base}/healthz")[0] == 200:
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("/healthz did not answer in time")


class Container:
    """The image running with HOST=127.0.0.1 and a free PORT on the host's network."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.env = {"HOST": "127.0.0.1", "PORT": str(port)}
        self.name = f"attention-lab-ct-{port}"
        self.how = ""
        self.server: subprocess.Popen | None = None

    def start(self, cmd: list[str]) -> None:
        env_flags = [f"--env={k}={v}" for k, v in self.env.items()]
        if shutil.which("podman"):
            probe = sh(
                "podman", "run", "--rm", "--network=host", *env_flags, IMAGE, "true", check=False
            )
            if probe.returncode == 0:
                self.how = "podman run"
                self.server = self._popen(
                    "podman", "run", "--rm", f"--name={self.name}", "--network=host",
                    *env_flags, IMAGE,
                )  # fmt: skip
                return
            print(f"  podman run does not work here ({probe.stderr.strip()[-120:]}); buildah run")
        sh("buildah", "from", f"--name={self.name}", IMAGE)
        self.how = "buildah run --isolation chroot"
        self.server = self._popen(
            "buildah", "run", "--isolation", "chroot", *env_flags, self.name, "--", *cmd
        )

    def exec(self, *cmd: str) -> subprocess.CompletedProcess:
        env_flags = [f"--env={k}={v}" for k, v in self.env.items()]
        if self.how == "podman run":
            return sh("podman", "exec", *env_flags, self.name, *cmd, check=False)
        return sh(
            "buildah", "run", "--isolation", "chroot", *env_flags, self.name, "--", *cmd,
            check=False,
        )  # fmt: skip

    @staticmethod
    def _popen(*args: str) -> subprocess.Popen:
        # A session of its own: stop() ends every process in it. Under `buildah run` the
        # app's uvicorn workers outlived a terminated buildah, still serving after the test.
        return subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip

    def stop(self) -> str:
        logs = ""
        if self.server is not None:
            signal_group(self.server.pid, signal.SIGTERM)
            try:
                logs = self.server.communicate(timeout=15)[0]
            except subprocess.TimeoutExpired:
                logs = ""
            signal_group(self.server.pid, signal.SIGKILL)  # whatever did not stop in time
            if self.server.returncode is None:
                logs = self.server.communicate()[0]
        if self.how == "podman run":
            sh("podman", "rm", "-f", self.name, check=False)
        else:
            sh("buildah", "rm", self.name, check=False)
        return logs


def signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # every process of the group has ended
        os.killpg(pid, signum)


def check(label: str, ok: bool, detail: str = "") -> bool:
    print(f"  {'ok  ' if ok else 'FAIL'} {label}{': ' + detail if detail else ''}", flush=True)
    return ok


def run_checks(container: Container, config: dict) -> bool:
    base = f"http://127.0.0.1:{container.port}"
    results = []
    uid = container.exec("id", "-u").stdout.strip()
    results.append(check("runs as a non-root user", uid not in ("", "0"), f"uid {uid}"))
    compilers = container.exec("sh", "-c", "command -v gcc cc c++ clang || true").stdout.strip()
    results.append(check("no compiler in the image", compilers == "", compilers or "none"))
    status, headers, _ = get(f"{base}/healthz")
    results.append(check("GET /healthz", status == 200, str(status)))
    health = config["Healthcheck"]["Test"]
    probe = container.exec(*health[1:])
    results.append(check(f"HEALTHCHECK {' '.join(health[1:])}", probe.returncode == 0))
    status, headers, body = get(f"{base}/api/attention", b"{}")
    rows = json.loads(body)["query"]["rows"]
    weights = [round(r["weight"], 3) for r in rows]
    results.append(
        check("POST /api/attention {} (cat)", weights == [0.67, 0.33, 0.0], f"{weights}")
    )
    status, _, body = get(f"{base}/api/model", b'{"text": "The cat sleeps"}')
    tokens = json.loads(body)["tokens"] if status == 200 else []
    results.append(
        check("POST /api/model (the trained model)", tokens[:1] == ["[CLS]"], f"{tokens}")
    )
    csp = headers.get("content-security-policy", "")
    results.append(check("security headers", "script-src 'self'" in csp))
    status, _, page = get(f"{base}/")
    results.append(check("GET /", status == 200 and b"cat" in page, f"{status}, {len(page)} B"))
    return all(results)


def main() -> int:
    started = time.monotonic()
    ensure_tools()
    print("container-test", flush=True)
    how = ensure_base()
    t = step(f"base image {BASE} ({how})", started)
    build()
    t = step(f"build {IMAGE} (buildah --isolation chroot)", t)
    size = sh("podman", "image", "inspect", "--format", "{{.Size}}", IMAGE).stdout.strip()
    base_size = sh("podman", "image", "inspect", "--format", "{{.Size}}", BASE).stdout.strip()
    print(f"  image size: {int(size) / 1e6:.0f} MB (base {int(base_size) / 1e6:.0f} MB)")
    config = image_config()
    container = Container(free_port())
    ok = False
    try:
        container.start(config["Cmd"])
        wait_healthy(f"http://127.0.0.1:{container.port}", container.server)
        t = step(f"start ({container.how}) until /healthz answers", t)
        ok = run_checks(container, config)
    finally:
        logs = container.stop()
    if not ok:
        print(logs[-3000:])
    step("total", started)
    print("container-test: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
