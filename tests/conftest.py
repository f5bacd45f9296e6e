"""Suite-wide fixtures. Every host the tests spawn keeps its state (sessions,
run traces, evaluation records) in a temporary directory, never in the
developer's own ``~/.local/state/oma-host``; ``host`` is a real ``oma-host``
spawned over stdio (``python -m oma_host``) and initialized, as an editor
would (``spawn_host`` starts more, or others), and ``server`` is the same
server in the test's own process, for tests whose subject is not the
process (as ``host`` is for the tests marked ``in_process``). Every host,
and the tests' own process, offers the in-process ``test`` provider
(``OMA_HOST_TEST_PROVIDER=1``), none inherits delegation
limits (``OMA_HOST_DELEGATION``) from whatever ran the suite, and none reads
a provider endpoint from the developer's environment (``ANTHROPIC_BASE_URL``...):
a test that wants one sets it."""

from __future__ import annotations

import compileall
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import oma_host
import oma_host.bridges
from oma_host.cli.client import HostClient
from oma_host.core.delegation import LIMITS_VARIABLE
from oma_host.core.provider_facts import PROVIDERS, TEST_PROVIDER_VARIABLE
from oma_host.testing.simulator import Simulator
from oma_host.wire import acp_library as acp_library  # the ACP library as the host loads it
from tests.server.helpers import HostFactory, InProcessFactory, InProcessHost


@pytest.fixture(autouse=True, scope="session")
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("xdg-state")
    previous = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(state)
    yield state
    if previous is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = previous


@pytest.fixture(autouse=True, scope="session")
def _test_provider_offered() -> Iterator[None]:
    previous = os.environ.get(TEST_PROVIDER_VARIABLE)
    os.environ[TEST_PROVIDER_VARIABLE] = "1"
    yield
    if previous is None:
        os.environ.pop(TEST_PROVIDER_VARIABLE, None)
    else:
        os.environ[TEST_PROVIDER_VARIABLE] = previous


@pytest.fixture(autouse=True, scope="session")
def _no_inherited_delegation_limits() -> Iterator[None]:
    """The tests' hosts start with no delegation limits of their own, even
    when the suite runs under an oma-host's shell (whose commands get them)."""
    previous = os.environ.pop(LIMITS_VARIABLE, None)
    yield
    if previous is not None:
        os.environ[LIMITS_VARIABLE] = previous


@pytest.fixture(autouse=True, scope="session")
def _no_endpoint_variables() -> Iterator[None]:
    names = {n for facts in PROVIDERS for n in facts.base_url_variables}
    names |= {f.base_url_variables_off for f in PROVIDERS if f.base_url_variables_off}
    previous = {name: os.environ.pop(name) for name in names if name in os.environ}
    yield
    os.environ.update(previous)


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A provider simulator on 127.0.0.1, in a thread of the test's process."""
    with Simulator() as simulator:
        yield simulator


# -- Hosts: one factory for every test that talks to a spawned host, and the
# server in the test's process for those whose subject is not the process.
# A module (or a conftest.py) says what its hosts need by overriding
# ``host_variables`` or ``host_options``; a test that needs more than one
# host, or one started differently, calls ``spawn_host`` itself.


@pytest.fixture
async def spawn_host() -> AsyncIterator[HostFactory]:
    """Spawns initialized hosts (see :class:`HostFactory`); each is closed
    (shutdown + exit) when the test ends."""
    factory = HostFactory()
    yield factory
    await factory.close_all()


@pytest.fixture
async def serve_host(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[InProcessFactory]:
    """Serves initialized hosts in the test's process (see
    :class:`InProcessFactory`); each is closed when the test ends."""
    factory = InProcessFactory(monkeypatch)
    yield factory
    await factory.close_all()


@pytest.fixture
def host_variables() -> dict[str, str]:
    """The environment variables the ``host`` fixture's host gets on top of
    the test's own (provider keys, typically)."""
    return {}


@pytest.fixture
def host_options() -> dict[str, Any] | None:
    """The ``initializationOptions`` the ``host`` fixture's host is initialized with."""
    return None


@pytest.fixture
async def host(
    request: pytest.FixtureRequest,
    spawn_host: HostFactory,
    host_variables: dict[str, str],
    host_options: dict[str, Any] | None,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[HostClient]:
    """A real ``oma-host`` spawned over stdio and initialized, as an editor
    would; for a test marked ``in_process`` (:data:`MARKED_PATHS`), the real
    server in the test's own process (see :class:`InProcessHost`), its
    environment the test's with ``host_variables``."""
    if request.node.get_closest_marker("in_process") is None:
        yield await spawn_host(env=host_variables, options=host_options)
        return
    for name, value in host_variables.items():
        monkeypatch.setenv(name, value)
    client = await InProcessHost.serve()
    await client.initialize(host_options)
    yield client
    await client.close()


@pytest.fixture
async def server() -> AsyncIterator[InProcessHost]:
    """The real server (the session ``oma-host`` serves on stdio) in the
    test's own process, over in-memory streams, initialized: for protocol
    tests whose subject is not the process (see :class:`InProcessHost`)."""
    client = await InProcessHost.serve()
    await client.initialize()
    yield client
    await client.close()


# --- Tiers and parallel runs ---------------------------------------------
# The markers name what a test needs beyond Python (registered in
# pyproject.toml), so that ``-m "not editors and not ray and not node"`` is
# the fast tier; the plain ``python3 -m pytest`` runs every test, on
# pytest-xdist workers (``addopts``). ``xdist_group`` keeps on one worker the
# tests that share something a second worker would break or pay for twice.

# Path prefixes (from the repository's root) and the markers their tests get.
MARKED_PATHS: dict[str, tuple[str, ...]] = {
    "tests/editors/": ("editors", "node"),  # code-server, chromium, neovim, npm builds
    "tests/cli/test_run_viewer_page.py": ("editors",),  # the viewer's page in chromium
    "tests/orchestration/test_ray_executor.py": ("ray",),
    # Their subject is a provider's wire, the policy, the grants, the history,
    # a tool, a team or the ACP bridge, not the process: ``host`` is the
    # server in the test's process, and what it starts (commands, MCP servers,
    # agents) are real processes still. A test that reads a host's stderr,
    # memory or pid, or kills it, spawns one itself.
    "tests/providers/": ("in_process",),
    "tests/llm/test_compaction.py": ("in_process",),
    "tests/llm/test_delegate_tool.py": ("in_process",),
    "tests/llm/test_shell_tool.py": ("in_process",),
    "tests/interop/test_acp_runs.py": ("in_process",),
    "tests/interop/test_acp_mcp.py": ("in_process",),
    "tests/interop/test_acp_session.py": ("in_process",),
    "tests/orchestration/test_teams.py": ("in_process",),
    "tests/orchestration/test_team_limits.py": ("in_process",),
    "tests/llm/test_environment_prompt.py": ("in_process",),
    "tests/llm/test_permissions.py": ("in_process",),
    "tests/llm/test_permission_trace.py": ("in_process",),
    "tests/llm/test_tool_declarations.py": ("in_process",),
    "tests/llm/test_tool_grants.py": ("in_process",),
}
# The fixtures that install or run the npm peers (tests/npm_packages.py).
NODE_FIXTURES = frozenset(
    {
        "client_dir",
        "acp_agent_dir",
        "acp_agent_script",
        "gemini_script",
        "npm_servers",
        "_agent_packages",
    }
)
# Tests that write the same files: every module here builds editors/vscode
# (``npm run build`` into its out/, the .vsix test deletes it first).
SHARED_GROUPS: dict[str, str] = {
    "tests/editors/test_vscode.py": "editors-vscode-build",
    "tests/editors/test_vsix.py": "editors-vscode-build",
    "tests/editors/test_code_server.py": "editors-vscode-build",
}


def pytest_configure(config: pytest.Config) -> None:
    """The package compiled once, before any worker starts: the hundreds of
    hosts the tests spawn load it as bytecode instead of each compiling it
    again, as they would where ``PYTHONDONTWRITEBYTECODE`` keeps every
    process from writing what it compiles (a fresh checkout has none)."""
    if hasattr(config, "workerinput"):  # an xdist worker: its controller did it
        return
    for package in (oma_host.__file__, oma_host.bridges.__file__):
        compileall.compile_dir(Path(package).parent, quiet=1)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Without xdist (``-p no:xdist``, or not installed) the ``-n`` and
    ``--dist`` of ``addopts`` are accepted and the run is serial."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist", "serial run: pytest-xdist is not loaded")
    group._addoption("-n", "--numprocesses", dest="numprocesses", help="ignored: no xdist")
    group.addoption("--dist", dest="dist", default="no", help="ignored: no xdist")


def _module_scoped(item: pytest.Item) -> bool:
    """Whether the test uses a fixture made once per module (a Ray cluster, a
    browser, a built wheel): its module's tests then share one worker."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definition.scope in ("module", "package")
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix()
        for prefix, markers in MARKED_PATHS.items():
            if path.startswith(prefix):
                for marker in markers:
                    item.add_marker(marker)
        if NODE_FIXTURES.intersection(item.fixturenames):
            item.add_marker("node")
        group = SHARED_GROUPS.get(path) or (path if _module_scoped(item) else None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # The groups first: each runs on one worker from end to end (the VS Code
    # builds, the Ray cluster, the import batch take a minute or more), so
    # started last they would leave the other workers idle at the end.
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
