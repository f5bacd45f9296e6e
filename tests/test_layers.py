"""The package's layers, checked from the source: no import cycles among the
project's own modules, and every import points the way docs/architecture.md
says (the doors -> orchestration -> the core; backends and providers plug into
the core, which never imports them).

Every import counts: module level, inside functions (lazy imports) and under
``TYPE_CHECKING``, since each is a dependency someone reading the code must
follow.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "oma_host"

# Which layers each layer may import (besides itself). A layer is the first
# two components of a module name (``oma_host.core``); docs/architecture.md
# says what each owns, bottom up.
ALLOWED: dict[str, set[str]] = {
    # Process supervision: the warden, the subreaper, process groups, orphans.
    "oma_host.process": set(),
    # The contract and the agent.
    "oma_host.core": set(),
    # The JSON-RPC wire under every connection.
    "oma_host.wire": {"oma_host.core"},
    # The runs' spans exported to an OTLP collector.
    "oma_host.telemetry": {"oma_host.core"},
    "oma_host.providers": {"oma_host.core"},
    # Files and commands in the user's folders, for the LLM tools and the ACP bridge.
    "oma_host.workspace": {"oma_host.core", "oma_host.process"},
    "oma_host.llm": {
        "oma_host.core",
        "oma_host.process",
        "oma_host.providers",
        "oma_host.wire",
        "oma_host.workspace",
    },
    "oma_host.bridges": {
        "oma_host.core",
        "oma_host.process",
        "oma_host.wire",
        "oma_host.workspace",
    },
    "oma_host.orchestration": {"oma_host.core", "oma_host.process"},
    "oma_host.testing": {"oma_host.core", "oma_host.providers"},
    "oma_host.server": {
        "oma_host.core",
        "oma_host.orchestration",
        "oma_host.process",
        "oma_host.providers",
        "oma_host.telemetry",
        "oma_host.wire",
        "oma_host.workspace",  # what confines an agent's commands (agent/state)
    },
    # The ACP door: beside the JSON-RPC door, never on it.
    "oma_host.acp_server": {
        "oma_host.core",
        "oma_host.orchestration",
        "oma_host.process",
        "oma_host.providers",
        "oma_host.telemetry",
        "oma_host.wire",
        "oma_host.workspace",
    },
    "oma_host.cli": {
        "oma_host.acp_server",
        "oma_host.core",
        "oma_host.orchestration",
        "oma_host.process",
        "oma_host.server",
        "oma_host.telemetry",
        "oma_host.testing",
        "oma_host.wire",
    },
    # The public API (``oma_host/__init__``) and ``python -m oma_host``.
    "oma_host": {"oma_host.core", "oma_host.orchestration", "oma_host.cli"},
}

# Single modules a layer may import besides its ALLOWED layers, each with why.
ALLOWED_MODULES: dict[str, set[str]] = {}

# The one module that may name modules of other layers in strings, and import
# them by name: the registry of backends and provider adapters.
REGISTRY = "oma_host.core.plugins"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Every module of the package, ``bridges/`` (linked in as
    ``oma_host/bridges``) included."""
    found = {}
    for folder, _dirs, files in os.walk(ROOT / PACKAGE, followlinks=True):
        for name in sorted(files):
            if name.endswith(".py"):
                found[_module_name(Path(folder) / name)] = Path(folder) / name
    return found


MODULES = _modules()


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _own(name: str) -> str | None:
    """The longest module of ours that ``name`` is or lies in."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node, path.name == "__init__.py")
            # ``from package import module`` imports the submodule.
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for name in names:
            own = _own(name)
            if own is not None and own != module:
                targets.add(own)
    return targets


GRAPH = {module: _imports(module) for module in MODULES}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or not (ROOT / parts[0] / parts[1]).is_dir():
        return parts[0]  # oma_host itself, its __main__
    return ".".join(parts[:2])


def _parents(module: str) -> set[str]:
    """Importing a module runs its packages' ``__init__`` first."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_every_layer_is_known() -> None:
    unknown = sorted({_layer(module) for module in MODULES} - set(ALLOWED))
    assert not unknown, f"layers missing from ALLOWED: {unknown}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    layer = _layer(module)
    allowed = ALLOWED[layer] | {layer}
    wrong = sorted(
        target
        for target in GRAPH[module]
        if _layer(target) not in allowed
        and target not in _parents(module)
        and target not in ALLOWED_MODULES.get(layer, set())
    )
    assert not wrong, f"{module} ({layer}) imports {wrong}, outside {sorted(allowed)}"


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over the whole graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


# A string that names a module of ours: "oma_host.x.y", "oma_host.x.y:attribute",
# or the start of one ("oma_host.x." completed at run time).
_MODULE_NAME = re.compile(r"oma_host(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*)?|oma_host(\.[A-Za-z_]\w*)*\.")
_IMPORT_CALLS = {"import_module", "__import__", "find_spec", "resolve_name"}


def _is_sys_modules(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "modules"
        and (isinstance(node.value, ast.Name) and node.value.id == "sys")
    )


def _lookups_only(tree: ast.AST) -> set[int]:
    """The ids of strings used only to look in ``sys.modules`` (which imports nothing)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_sys_modules(node.value):
            found.add(id(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and _is_sys_modules(node.func.value) and node.args:
                found.add(id(node.args[0]))
        elif isinstance(node, ast.Compare) and any(_is_sys_modules(c) for c in node.comparators):
            found.add(id(node.left))
    return found


def string_imports(module: str, source: str, filename: str) -> list[str]:
    """Where ``module`` (whose text is ``source``) imports another layer by a
    string: an import call (``importlib.import_module``, ``__import__``) of a
    module named in place, or a string naming a module of another layer (or
    the start of one). Each as "file:line: what"."""
    tree = ast.parse(source, filename)
    layer, lookups, found = _layer(module), _lookups_only(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            argument = node.args[0] if node.args else None
            if name in _IMPORT_CALLS and isinstance(argument, (ast.JoinedStr, ast.BinOp, ast.Call)):
                found.append(f"{filename}:{node.lineno}: {name}() of a module name built in place")
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in lookups or not _MODULE_NAME.fullmatch(node.value):
            continue
        named = _own(node.value.partition(":")[0].rstrip("."))
        if named is not None and _layer(named) != layer:
            found.append(
                f"{filename}:{node.lineno}: names {node.value!r} ({_layer(named)}) in a string; "
                f"import it (if {layer} may), or name it in {REGISTRY}"
            )
    return found


@pytest.mark.parametrize("module", sorted(set(MODULES) - {REGISTRY}))
def test_no_layer_is_imported_by_a_string(module: str) -> None:
    """Outside the registry, another layer is imported only by an import
    statement, which the checks above read."""
    path = MODULES[module]
    found = string_imports(module, path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("oma_host.core.backends", 'PLUGINS = ("oma_host.llm", "oma_host.bridges")'),
        ("oma_host.core.tools", 'importlib.import_module("oma_host.llm.tools")'),
        ("oma_host.core.tools", '__import__("oma_host.llm.tools")'),
        ("oma_host.core.provider_facts", 'F(adapter="oma_host.providers.gemini:GeminiAdapter")'),
        ("oma_host.core.tools", 'importlib.import_module(f"oma_host.llm.{name}")'),
        ("oma_host.core.tools", 'importlib.import_module("oma_host." + name)'),
    ],
)
def test_the_string_check_finds_each_form(module: str, source: str) -> None:
    assert string_imports(module, source, "x.py")


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("oma_host.server.registry", '_AGENTS = "oma_host.server.agent_methods"'),
        ("oma_host.server.app", 'http = sys.modules.get("oma_host.providers.http")'),
        ("oma_host.core.tools", "importlib.import_module(name)"),
        ("oma_host.core.tools", '"""See :mod:`oma_host.llm.tools`."""'),
    ],
)
def test_the_string_check_passes_one_layers_names(module: str, source: str) -> None:
    assert not string_imports(module, source, "x.py")


# Imports each module of ours in a fresh child of one interpreter that has
# loaded only the third-party packages: no hidden order among our modules, at
# the cost of one interpreter, not one per module. Ray is left to the child
# that needs it: it starts threads, which a fork does not carry.
_IMPORT_EACH = """
import importlib, os, sys, traceback
for name in sys.argv[2].split(","):
    try:
        importlib.import_module(name)
    except Exception:
        pass
results = {}
for module in sys.argv[1].split(","):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(module)
        except BaseException:
            os.write(write, traceback.format_exc()[-2000:].encode())
            os._exit(1)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        error = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        print(module, repr(error or f"exit status {status}"), sep="\t")
"""


def _third_party() -> list[str]:
    """The top-level packages our modules import that are not ours or Python's."""
    names: set[str] = set()
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return sorted(names - set(sys.stdlib_module_names) - {PACKAGE, "__future__", "ray"})


@pytest.fixture(scope="module")
def import_failures() -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, ",".join(_IMPORTABLE), ",".join(_third_party())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)


# Running ``__main__`` would start the host.
_IMPORTABLE = [m for m in sorted(MODULES) if not m.endswith("__main__")]


# The first test waits for the whole batch (about 15 s of CPU).
@pytest.mark.timeout(600)
@pytest.mark.parametrize("module", _IMPORTABLE)
def test_each_module_imports_alone(module: str, import_failures: dict[str, str]) -> None:
    """A fresh interpreter imports the module by itself: no hidden order."""
    assert module not in import_failures, import_failures.get(module)
