"""How one GET / travels through the app's layers: the calls between files of app/ made while
the lab's route runs (its page computed and rendered), and how often that path turns back up
to a higher layer before going down again.

- A call between files: a Python function of one file of app/ calling a function of another
  file of app/ (sys.setprofile), counted once per caller and callee (a loop over the cells
  calls the same function many times: that is one call of the path).
- Layers, top to bottom, as import-linter checks them (pyproject.toml): app.main; the
  features that build on the lab; app.features.lab; app.features.stages; app.web;
  app.figures; app.core; app.math.
- A return to a higher layer: along those calls in the order they first happen, a call whose
  callee sits in a higher layer than the callee of the call before it (the path had gone
  down, came back up, and now goes down again).
- How often the head is computed: calls of app.math.attention.attend.

    .venv/bin/python bench/trace_lab.py                  # this tree, and `next` as before
    .venv/bin/python bench/trace_lab.py --before REV     # against another revision
    .venv/bin/python bench/trace_lab.py --path           # and list the path, call by call

The revision is exported with `git archive` into a temporary folder and traced there in a
subprocess, so both figures come from the same script, run the same way.
"""

import argparse
import itertools
import json
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"calls": 20, "returns": 3, "heads": 1}
LAYERS = (
    "app/main",
    "app/features/*",  # every feature but the two below: they build on the lab
    "app/features/lab",
    "app/features/stages",
    "app/web",
    "app/figures",
    "app/core",
    "app/math",
)


def layer(file: str) -> int:
    """The layer of a file of app/ (0 the top), by its path."""
    if file.startswith("app/features/"):
        feature = file.split("/")[2]
        return LAYERS.index(
            f"app/features/{feature}" if feature in ("lab", "stages") else "app/features/*"
        )
    return next(i for i, name in enumerate(LAYERS) if file.startswith(name))


def trace(root: Path, path: str) -> dict[str, Any]:
    """The calls between files of app/ while GET `path`'s route runs, in `root`'s app."""
    sys.path.insert(0, str(root))
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    app_dir = str(root / "app") + "/"
    template_dir = str(root / "templates") + "/"
    rendering: dict[tuple[str, str, str, str], None] = {}  # calls made from a template
    edges: dict[tuple[str, str, str, str], None] = {}  # (caller file, function, callee …)
    heads = [0]
    inside: dict[int, int] = {}  # thread → depth of the route's frame, while it runs

    def where(frame: FrameType) -> str | None:
        file = frame.f_code.co_filename
        return file[len(str(root)) + 1 :] if file.startswith(app_dir) else None

    on = [False]

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if not on[0] or event not in ("call", "return"):
            return
        me = threading.get_ident()
        code = frame.f_code
        if where(frame) == "app/features/lab/routes.py" and code.co_name == "lab":
            if event == "call":
                inside[me] = 1
            else:
                inside.pop(me, None)
            return
        if event != "call" or me not in inside:
            return
        callee = where(frame)
        caller = frame.f_back and where(frame.f_back)
        if callee == "app/math/attention.py" and code.co_name == "attend":
            heads[0] += 1
        if callee and caller and callee != caller:
            edge = (caller, frame.f_back.f_code.co_name, callee, code.co_name)
            (rendering if in_template(frame) else edges).setdefault(edge)

    def in_template(frame: FrameType | None) -> bool:
        while frame is not None:
            if frame.f_code.co_filename.startswith(template_dir):
                return True
            frame = frame.f_back
        return False

    # No answer cache: the traced request must run its route.
    app = create_app(Settings(log_level="warning", response_cache_bytes=0))
    threading.setprofile(profile)  # every thread the client starts (the route's among them)
    with TestClient(app) as client:
        client.get(path)  # templates compiled, catalogs loaded: the path, not the first visit
        on[0] = True
        client.get(path)
        on[0] = False
    threading.setprofile(None)  # type: ignore[arg-type]
    path_rows = [{"from": f"{a}:{f}", "to": f"{b}:{g}", "layer": layer(b)} for a, f, b, g in edges]
    returns = sum(
        1 for before, now in itertools.pairwise(path_rows) if now["layer"] < before["layer"]
    )
    files = {row["to"].split(":")[0] for row in path_rows} | {
        row["from"].split(":")[0] for row in path_rows
    }
    return {
        "calls": len(path_rows),
        "files": len(files),
        "returns": returns,
        "heads": heads[0],
        "rendering": len(rendering),
        "path": path_rows,
    }


def traced_at(revision: str, path: str) -> dict[str, Any]:
    """trace() of `revision`'s app, exported and run in a subprocess."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "archive",
                revision,
                "app",
                "templates",
                "static",
                "translations",
            ],
            check=True,
            capture_output=True,
        ).stdout
        tar = Path(folder) / "tree.tar"
        tar.write_bytes(archive)
        with tarfile.open(tar) as bundle:
            bundle.extractall(folder, filter="data")
        done = subprocess.run(
            [sys.executable, __file__, "--json", "--root", folder, "--url", path],
            check=True,
            capture_output=True,
            text=True,
        )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="next", help="the revision to compare with")
    parser.add_argument("--url", default="/", help="the lab address to trace")
    parser.add_argument("--path", action="store_true", help="list each call of the path")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(trace(Path(args.root), args.url)))
        return
    before = traced_at(args.before, args.url)
    after = traced_at_tree(args.url)
    print(f"GET {args.url}: the lab route's path through app/ (goal in brackets)")
    print(f"{'':34}{'before (' + args.before + ')':>18}{'this tree':>12}")
    for key, label in (
        ("calls", "calls between files"),
        ("files", "files on the path"),
        ("returns", "returns to a higher layer"),
        ("heads", "heads computed"),
        ("rendering", "calls made by the templates"),
    ):
        goal = f"(≤ {GOALS[key]})" if key in GOALS else ""
        print(f"  {label:<32}{before[key]:>18}{after[key]:>12}  {goal}")
    if args.path:
        for name, result in (("before", before), ("this tree", after)):
            print(f"\n{name}:")
            previous = None
            for row in result["path"]:
                turn = " ↑" if previous is not None and row["layer"] < previous else ""
                print(f"  {row['from']} → {row['to']}{turn}")
                previous = row["layer"]


def traced_at_tree(path: str) -> dict[str, Any]:
    """trace() of this working tree, in a subprocess as the other revision is."""
    done = subprocess.run(
        [sys.executable, __file__, "--json", "--root", str(ROOT), "--url", path],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout)


if __name__ == "__main__":
    main()
