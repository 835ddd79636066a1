"""The app uses the web libraries through their public APIs only: no access to a name with a
leading underscore on their modules, their classes, or objects of their types.

Found by reading the source (no import): a name bound by `import`/`from … import` from one of
the libraries, a parameter or variable annotated with one of their types, `self` and `super()`
inside a class that extends one of theirs, and `getattr(…, "_name")` anywhere. The one
exception is the uvicorn protocol subclass (app/server/protocol.py), kept with uvicorn pinned
exactly and tested over real sockets (tests/server/): it may override the hook it names below,
and nothing else.
"""

import ast
import importlib
import inspect
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

APP = Path(__file__).resolve().parents[1] / "app"
LIBRARIES = frozenset(
    {
        "fastapi",
        "starlette",
        "uvicorn",
        "uvicorn_worker",
        "gunicorn",
        "starlette_compress",
        "jinja2",
        "servestatic",
        "cachetools",
        "anyio",
        "pydantic",
    }
)
ALLOWED = {"server/protocol.py": frozenset({"_start_asgi_task"})}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def from_library(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in LIBRARIES


def library_names(tree: ast.Module) -> set[str]:
    """The names a module binds to the libraries' modules, classes and functions."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if from_library(alias.name):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and from_library(node.module):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def mentions(annotation: ast.expr | None, names: set[str]) -> bool:
    return annotation is not None and any(
        isinstance(n, ast.Name) and n.id in names for n in ast.walk(annotation)
    )


def typed_names(tree: ast.Module, names: set[str]) -> set[str]:
    """Parameters and variables annotated with one of the libraries' types."""
    typed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and mentions(node.annotation, names):
            typed.add(node.arg)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and mentions(node.annotation, names)
        ):
            typed.add(node.target.id)
    return typed


def root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def private_uses(source: str) -> Iterator[tuple[int, str]]:
    """(line, name) of each private name of the libraries that `source` reaches for."""
    tree = ast.parse(source)
    names = library_names(tree)
    watched = names | typed_names(tree, names)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and from_library(node.module):
            parts = [*node.module.split("."), *(a.name for a in node.names)]
            yield from ((node.lineno, p) for p in parts if private(p))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if from_library(alias.name):
                    parts = alias.name.split(".")
                    yield from ((node.lineno, p) for p in parts if private(p))
        elif isinstance(node, ast.Attribute) and private(node.attr):
            base = root(node.value)
            if isinstance(base, ast.Name) and base.id in watched:
                yield node.lineno, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
        ):
            yield node.lineno, node.args[1].value


def library_private_names(cls: type) -> set[str]:
    """The private names the libraries' classes among `cls`'s ancestors define."""
    return {
        name
        for base in cls.__mro__[1:]
        if from_library(base.__module__)
        for name in vars(base)
        if private(name)
    }


def inherited_private_uses(cls: type, source: str) -> set[str]:
    """The libraries' private names a subclass of theirs overrides or reaches for: those it
    defines, and those its methods use on `self`, `cls` or `super()`."""
    used = set()
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            used.add(node.name)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            used.add(node.id)
    return library_private_names(cls) & used


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from fastapi.routing import _effective_route_context_var", {"_effective_route_context_var"}),  # noqa: E501
        ("from starlette.requests import Request\ndef f(r: Request): return r._json", {"_json"}),
        ("import starlette_compress.gzip\nx = starlette_compress.gzip.oneshot._state", {"_state"}),
        ("x = getattr(route, '_embed_body_fields')", {"_embed_body_fields"}),
        ("import jinja2._identifier", {"_identifier"}),
        ("class Mine:\n    def _own(self):\n        return self._state", set()),
        ("from starlette.requests import Request\nasync def f(r: Request): return r.url", set()),
    ],
)  # fmt: skip
def test_the_scan_finds_private_names_and_only_those(source: str, found: set[str]) -> None:
    assert {name for _, name in private_uses(source)} == found


class OverridesAHook(HttpToolsProtocol):
    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        super()._start_asgi_task(cycle, app)


class OwnPrivateMethod(BaseModel):
    def _check_x(self) -> None:
        return None


def test_the_scan_finds_what_a_subclass_takes_from_the_library_and_only_that() -> None:
    assert inherited_private_uses(OverridesAHook, inspect.getsource(OverridesAHook)) == {
        "_start_asgi_task"
    }
    assert inherited_private_uses(OwnPrivateMethod, inspect.getsource(OwnPrivateMethod)) == set()


def app_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(APP.rglob("*.py")):
        relative = path.relative_to(APP)
        yield ".".join(("app", *relative.with_suffix("").parts)).removesuffix(".__init__"), path


def test_the_app_reaches_for_no_private_name_of_the_web_libraries() -> None:
    found = []
    for name, path in app_modules():
        relative = path.relative_to(APP).as_posix()
        allowed = ALLOWED.get(relative, frozenset())
        uses = {(line, used) for line, used in private_uses(path.read_text())}
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if isinstance(cls, type) and cls.__module__ == name:
                uses |= {(0, used) for used in inherited_private_uses(cls, inspect.getsource(cls))}
        found += [f"app/{relative}:{line} {used}" for line, used in uses if used not in allowed]
    assert sorted(found) == []


def test_the_excepted_subclass_still_uses_what_it_is_allowed() -> None:
    """If the protocol stopped needing its hook, the exception would go too."""
    for relative, names in ALLOWED.items():
        name = "app." + relative.removesuffix(".py").replace("/", ".")
        module = importlib.import_module(name)
        used = set().union(
            *(
                inherited_private_uses(cls, inspect.getsource(cls))
                for cls in vars(module).values()
                if isinstance(cls, type) and cls.__module__ == name
            )
        )
        assert names <= used
