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
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("oma_host", "bridges")

# Which layers each layer may import (besides itself). A layer is the first
# two components of a module name (``oma_host.core``), or ``bridges``.
ALLOWED: dict[str, set[str]] = {
    # The public API (``oma_host/__init__``) and ``python -m oma_host``.
    "oma_host": {"oma_host.core", "oma_host.orchestration", "oma_host.cli"},
    "oma_host.core": set(),
    "oma_host.providers": {"oma_host.core"},
    "oma_host.llm": {"oma_host.core", "oma_host.providers"},
    # The ACP bridge serves an agent's fs/* with the LLM tools' confinement,
    # edits, editor channel and permission policy (oma_host.llm.confined,
    # edits, editor_files, permissions, and file_write's declaration).
    "bridges": {"oma_host.core", "oma_host.llm"},
    "oma_host.orchestration": {"oma_host.core"},
    # The live span export, used by both doors.
    "oma_host.telemetry": {"oma_host.core"},
    "oma_host.testing": {"oma_host.core", "oma_host.providers"},
    "oma_host.server": {
        "oma_host.core",
        "oma_host.orchestration",
        "oma_host.providers",
        "oma_host.telemetry",
    },
    # The ACP door: beside the JSON-RPC door, never on it.
    "oma_host.acp_server": {
        "oma_host.core",
        "oma_host.orchestration",
        "oma_host.providers",
        "oma_host.telemetry",
    },
    "oma_host.cli": {
        "oma_host.acp_server",
        "oma_host.core",
        "oma_host.orchestration",
        "oma_host.server",
        "oma_host.testing",
    },
}

# Single modules a layer may import besides its ALLOWED layers, each with why.
ALLOWED_MODULES: dict[str, set[str]] = {
    # The ACP door opens a repository's command templates (.oma/commands) with
    # the LLM tools' confinement, a leaf module that imports nothing of ours.
    "oma_host.acp_server": {"oma_host.llm.confined"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
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
    if parts[0] == "bridges":
        return "bridges"
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


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_module_imports_alone(module: str) -> None:
    """A fresh interpreter imports the module by itself: no hidden order."""
    import subprocess
    import sys

    if module.endswith("__main__"):
        pytest.skip("running __main__ starts the host")
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
