"""Build the image for real and check it through HTTP; `make test` runs this beside pytest.

It needs buildah (or podman) and mmdebstrap, and skips with one sentence saying so when they
are missing (`.ci/run` installs them, so CI always runs it). No registry image can be pulled
here, so the base is bootstrapped from Debian's packages with mmdebstrap (python3 and the few
packages below, nothing else), and the uv image is made from the uv that `make` installed
(`--uv`), the version the Dockerfile names. The Dockerfile is built with `--isolation chroot`
and that uv's cache lent to the build, so the wheels of uv.lock that `make` downloaded are not
downloaded again. Then the container is started and /healthz, the image's own HEALTHCHECK
command, the worked example, the trained model, the decoder (its weights prepared as the image
was built) and the security headers are checked through HTTP. Everything it made (the base,
the images, the containers) is removed before it exits, whatever happened.

`--clean` removes what an interrupted run left behind (`make clean` calls it).
Exit status: 0 when every check passed or the check was skipped, 1 when something failed.
"""

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Names of this checkout's images and containers: concurrent checkouts on one machine do not
# touch each other's, and `--clean` finds only its own.
PREFIX = "attention-lab-check-" + hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]
SUITE = "bookworm"
# The essential variant is minbase without apt (the image installs nothing with apt); useradd
# is in passwd, and numpy needs libstdc++6, which minbase has only through apt.
BASE_PACKAGES = "python3,passwd,libstdc++6"
MERGED_USR_HOOK = Path("/usr/share/mmdebstrap/hooks/merged-usr")
UV_CACHE_IN_BUILD = "/uv-cache"
CA_BUNDLE = Path(os.environ.get("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt"))


class CheckError(Exception):
    """A step that failed, said in one sentence."""


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    with subprocess.Popen(
        args, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        try:
            stdout, stderr = process.communicate()
        except KeyboardInterrupt:
            # SIGTERM, not subprocess.run's SIGKILL, and no time limit: mmdebstrap ends the
            # step it is in, then unmounts /proc and /dev from the base and removes its files.
            process.terminate()
            process.communicate()
            raise
    done = subprocess.CompletedProcess(args, process.returncode, stdout, stderr)
    if check and done.returncode != 0:
        output = last_line(done.stderr or done.stdout)
        raise CheckError(f"`{' '.join(args[:2])}` exited with status {done.returncode}: {output}")
    return done


def podman_error(done: subprocess.CompletedProcess) -> str:
    """podman's own reason, whole: its last "Error: …" line (its other lines are warnings
    about systemd timers and the like), without the prefix."""
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    return errors[-1].removeprefix("Error: ").rstrip(".") if errors else last_line(done.stderr)


def last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


class Timer:
    def __init__(self) -> None:
        self.started = self.last = time.monotonic()

    def step(self, label: str) -> None:
        now = time.monotonic()
        print(f"  {label}: {now - self.last:.1f} s", flush=True)
        self.last = now


def missing_tools() -> str | None:
    """Why the check cannot run here, or None."""
    if shutil.which("buildah") is None and shutil.which("podman") is None:
        return "neither buildah nor podman is installed"
    if shutil.which("mmdebstrap") is None:
        return "mmdebstrap, which bootstraps the base image, is not installed"
    return None


class Build:
    """The images and containers of one run, named after the checkout and the process."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.base = f"localhost/{PREFIX}-base:{os.getpid()}"
        self.uv = f"localhost/{PREFIX}-uv:{os.getpid()}"
        self.image = f"localhost/{PREFIX}:{os.getpid()}"
        self.container = f"{PREFIX}-{os.getpid()}"

    def bootstrap_base(self) -> None:
        mmdebstrap = [
            "mmdebstrap",
            "--quiet",
            "--variant=essential",
            f"--include={BASE_PACKAGES}",
            "--dpkgopt=force-unsafe-io",
            # Removed at the end: dpkg's path-exclude would send every package through
            # mmdebstrap's tar filter, which tripled the time spent unpacking them.
            '--customize-hook=cd "$1"/usr/share && rm -rf doc/* man/* locale/* info/*',
            *([f"--hook-dir={MERGED_USR_HOOK}"] if MERGED_USR_HOOK.is_dir() else []),
            SUITE,
        ]
        if self.engine == "buildah":  # straight into a container's root: no tar to unpack
            sh("buildah", "from", f"--name={self.container}-base", "scratch")
            root = sh("buildah", "mount", f"{self.container}-base").stdout.strip()
            sh(*mmdebstrap, root)
            sh("buildah", "umount", f"{self.container}-base")
            sh("buildah", "commit", "--quiet", "--rm", f"{self.container}-base", self.base)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                sh(*mmdebstrap, f"{tmp}/base.tar")
                sh("podman", "import", f"{tmp}/base.tar", self.base)

    def make_uv_image(self, uv: Path) -> None:
        """An image holding this uv as /uv, as the Dockerfile's UV_IMAGE does."""
        with tempfile.TemporaryDirectory() as context:
            shutil.copy(uv, f"{context}/uv")
            Path(context, "Containerfile").write_text("FROM scratch\nCOPY uv /uv\n")
            sh(self.engine, "build", "--isolation=chroot", "--quiet", f"--tag={self.uv}", context)

    def build(self, uv: Path) -> None:
        cache = sh(str(uv), "cache", "dir").stdout.strip()
        secret = [f"--secret=id=cacert,src={CA_BUNDLE}"] if CA_BUNDLE.is_file() else []
        sh(
            self.engine,
            "build",
            "--isolation=chroot",
            "--format=docker",
            *secret,
            f"--build-arg=BASE_IMAGE={self.base}",
            f"--build-arg=UV_IMAGE={self.uv}",
            f"--volume={cache}:{UV_CACHE_IN_BUILD}",
            "--build-arg=UV_NO_CACHE=0",
            f"--build-arg=UV_CACHE_DIR={UV_CACHE_IN_BUILD}",
            f"--tag={self.image}",
            str(ROOT),
        )

    def config(self) -> tuple[list[str], list[str]]:
        """The image's CMD and HEALTHCHECK command."""
        if self.engine == "buildah":
            out = sh("buildah", "inspect", "--type=image", self.image).stdout
            config = json.loads(out)["Docker"]["config"]
            return config["Cmd"], config["Healthcheck"]["Test"][1:]
        out = sh("podman", "image", "inspect", self.image).stdout
        [image] = json.loads(out)
        return image["Config"]["Cmd"], image["Healthcheck"]["Test"][1:]

    def size(self, image: str) -> str:
        return sh(self.engine, "images", "--format={{.Size}}", image).stdout.strip()

    def remove(self) -> None:
        for name in (self.container, f"{self.container}-base"):
            sh(self.engine, "rm", name, check=False)  # an error: there is no such container
        sh(self.engine, "rmi", "--force", self.image, self.uv, self.base, check=False)


def remove_leftovers(engine: str) -> None:
    """What interrupted runs of this checkout left: containers, then images."""
    containers = sh(engine, "ps", "--all", "--format={{.Names}}", check=False).stdout.split()
    for name in containers:
        if name.startswith(PREFIX):
            sh(engine, "rm", "--force", name, check=False)
    images = sh(engine, "images", "--format={{.Name}}:{{.Tag}}", check=False).stdout.split()
    if names := [i for i in images if i.startswith(f"localhost/{PREFIX}")]:
        sh(engine, "rmi", "--force", *names, check=False)


class Container:
    """The image running with HOST=127.0.0.1 and a free PORT on the host's network."""

    def __init__(self, build: Build) -> None:
        self.build = build
        self.port = free_port()
        # One worker: the check is about the image, and each worker loads the models.
        self.env = ["--env=HOST=127.0.0.1", f"--env=PORT={self.port}", "--env=WORKERS=1"]
        self.server: subprocess.Popen | None = None

    def command(self, *cmd: str) -> list[str]:
        """The command that runs `cmd` in the container (a new one for podman's first)."""
        b = self.build
        if b.engine == "buildah":
            return ["buildah", "run", "--isolation=chroot", *self.env, b.container, "--", *cmd]
        if self.server is None:
            return [
                "podman",
                "run",
                "--rm",
                "--no-healthcheck",  # its timer needs systemd; the check runs the probe itself
                "--network=host",
                f"--name={b.container}",
                *self.env,
                b.image,
                *cmd,
            ]
        return ["podman", "exec", *self.env, b.container, *cmd]

    def start(self, cmd: list[str]) -> None:
        if self.build.engine == "buildah":
            sh("buildah", "from", f"--name={self.build.container}", self.build.image)
        # A session of its own: stop() ends every process in it. Under `buildah run` the
        # app's uvicorn workers outlived a terminated buildah, still serving after the test.
        self.server = subprocess.Popen(
            self.command(*cmd),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def exec(self, *cmd: str) -> subprocess.CompletedProcess:
        return sh(*self.command(*cmd), check=False)

    def wait_healthy(self, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise CheckError(
                    f"the container exited with status {self.server.returncode}: "
                    f"{last_line(self.server.stdout.read())}"
                )
            with contextlib.suppress(OSError):
                if get(f"{self.url}/healthz")[0] == 200:
                    return
            time.sleep(0.3)
        raise CheckError(f"/healthz did not answer 200 within {seconds:.0f} s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> str:
        """Ends the container's processes; returns what they printed."""
        if self.server is None:
            return ""
        signal_group(self.server.pid, signal.SIGTERM)
        try:
            logs = self.server.communicate(timeout=15)[0]
        except subprocess.TimeoutExpired:
            signal_group(self.server.pid, signal.SIGKILL)
            logs = self.server.communicate()[0]
        signal_group(self.server.pid, signal.SIGKILL)  # whatever outlived its parent
        return logs


def signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # every process of the group has ended
        os.killpg(pid, signum)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, body: bytes | None = None) -> tuple[int, dict, bytes]:
    headers = {"content-type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as answer:  # a 4xx or 5xx is an answer to check, too
        return answer.code, {k.lower(): v for k, v in answer.headers.items()}, answer.read()


def check(label: str, ok: bool, detail: str = "") -> bool:
    print(f"  {'ok  ' if ok else 'FAIL'} {label}{': ' + detail if detail else ''}", flush=True)
    return ok


def run_checks(container: Container, health: list[str]) -> bool:
    base = container.url
    uid = container.exec("id", "-u").stdout.strip()
    compilers = container.exec("sh", "-c", "command -v gcc cc c++ clang || true").stdout.strip()
    probe = container.exec(*health)
    status, _, _ = get(f"{base}/healthz")
    _, headers, body = get(f"{base}/api/attention", b"{}")
    weights = [round(r["weight"], 3) for r in json.loads(body)["query"]["rows"]]
    model_status, _, model_body = get(f"{base}/api/model", b'{"text": "The cat sleeps"}')
    tokens = json.loads(model_body)["tokens"] if model_status == 200 else []
    page_status, _, page = get(f"{base}/")
    csp = headers.get("content-security-policy", "")
    decoder_state = wait_for_decoder(base)
    ready_status, _, ready = get(f"{base}/readyz")
    prompt = b'{"text": "The capital of France is", "top": 1}'
    decoder_status, _, decoder_body = get(f"{base}/api/decoder", prompt)
    best = json.loads(decoder_body)["next"][0]["token"] if decoder_status == 200 else ""
    return all(
        [
            check("runs as a non-root user", uid not in ("", "0"), f"uid {uid}"),
            check("no compiler in the image", compilers == "", compilers or "none"),
            check("GET /healthz", status == 200, str(status)),
            check(f"HEALTHCHECK {' '.join(health)}", probe.returncode == 0),
            check("POST /api/attention {} (cat)", weights == [0.67, 0.33, 0.0], f"{weights}"),
            check("POST /api/model (the trained model)", tokens[:1] == ["[CLS]"], f"{tokens}"),
            check("the decoder's weights prepared in the image", decoder_state == "ready"),
            check("GET /readyz", ready_status == 200, ready.decode()),
            check("POST /api/decoder (the capital of France)", best == " Paris", repr(best)),
            check("security headers", "script-src 'self'" in csp),
            check("GET /", page_status == 200 and b"cat" in page, f"{page_status}, {len(page)} B"),
        ]
    )


def wait_for_decoder(base: str, seconds: float = 30) -> str:
    """The decoder's state in /healthz once it has stopped loading (its weights were prepared
    as the image was built, so it only memory-maps them)."""
    deadline = time.monotonic() + seconds
    while True:
        state = json.loads(get(f"{base}/healthz")[2])["decoder"]
        if state not in ("loading", "not loaded yet") or time.monotonic() > deadline:
            return state
        time.sleep(0.3)


@contextlib.contextmanager
def terminated_cleanly() -> Iterator[None]:
    """SIGTERM (`make test` interrupted or failed early) unwinds like Ctrl-C: the images go."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def check_container(engine: str, uv: Path) -> bool:
    timer = Timer()
    build = Build(engine)
    print(f"container check ({engine} --isolation chroot, a {SUITE} base from mmdebstrap)")
    container = Container(build)
    ok, verdict, logs = False, "FAILED", ""
    try:
        build.bootstrap_base()
        timer.step(f"base image ({BASE_PACKAGES}, {build.size(build.base)})")
        build.make_uv_image(uv)
        build.build(uv)
        timer.step(f"build ({build.size(build.image)})")
        cmd, health = build.config()
        probe = sh(*container.command("true"), check=False) if engine == "podman" else None
        if probe is not None and probe.returncode != 0:
            ok = True
            verdict = (
                f"built, not run: podman cannot start a container here ({podman_error(probe)}); "
                "with buildah installed the check runs the image with `buildah run`."
            )
        else:
            container.start(cmd)
            container.wait_healthy()
            timer.step("start until /healthz answers")
            ok = run_checks(container, health)
            verdict = "passed" if ok else "FAILED"
    except CheckError as failure:
        print(f"  {failure}")
    finally:
        logs = container.stop()
        build.remove()
        timer.step("remove the images and containers it made")
    if not ok and logs:
        print("the container's last lines:\n" + "\n".join(logs.splitlines()[-30:]))
    print(f"  total: {time.monotonic() - timer.started:.1f} s")
    print(f"container check: {verdict}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", type=Path, help="the uv to build with (its cache is lent)")
    parser.add_argument("--engine", choices=["buildah", "podman"], help="buildah if present")
    parser.add_argument("--clean", action="store_true", help="remove what earlier runs left")
    args = parser.parse_args()
    engine = args.engine or ("buildah" if shutil.which("buildah") else "podman")
    if args.clean:
        for tool in ("buildah", "podman"):
            if shutil.which(tool):
                remove_leftovers(tool)
        return 0
    if args.uv is None:
        parser.error("--uv is needed to build")
    if reason := missing_tools():
        print(f"Container check skipped: {reason} (`.ci/run` installs buildah and mmdebstrap).")
        return 0
    try:
        with terminated_cleanly():
            return 0 if check_container(engine, args.uv) else 1
    except KeyboardInterrupt:
        print("container check: stopped before the end; it removed what it had made.")
        return 1


if __name__ == "__main__":
    sys.exit(main())
