"""The LLM backend's entry: agents without a ``backend`` run the loop in :mod:`oma_host.llm.loop`.

:data:`BACKEND` is what :mod:`oma_host.core.plugins` finds for the ``"llm"``
kind; it stays light, importing the loop, tools and providers only when an
agent is checked or built.
"""

from __future__ import annotations

from oma_host.core.backends import LLM_KIND, Backend, BackendContext, BackendEntry
from oma_host.core.config import AgentConfig
from oma_host.core.errors import InvalidParamsError


def _check_config(config: AgentConfig) -> None:
    """What can be refused at construction: an unknown provider or tool, an
    invalid outputSchema, a maxCostBudget on a model with no known price."""
    from oma_host.llm.guards import check_cost_budget
    from oma_host.providers import check_provider

    check_provider(config.provider)
    check_cost_budget(config)
    if config.tools or config.disallowed_tools:  # imported only for an agent that names some
        from oma_host.llm.tools import check_tool_names

        check_tool_names(config)
    seen: set[str] = set()
    for index, server in enumerate(config.mcp_servers or []):
        if server.name in seen:
            raise InvalidParamsError(
                f"config.mcpServers[{index}].name: {server.name!r} is used by another server; "
                "each server needs its own name (its tools are offered as NAME__TOOL)"
            )
        seen.add(server.name)
    if config.output_schema is not None:
        from oma_host.llm.loop import check_output_schema

        check_output_schema(config.output_schema)


def _build(config: AgentConfig, context: BackendContext) -> Backend:
    from oma_host.llm.loop import LLMBackend

    return LLMBackend(
        config,
        context.permission_handler,
        context.editor,
        context.delegates,
        checkpoints=context.checkpoints,
    )


BACKEND = BackendEntry(
    LLM_KIND,
    _build,
    accepts_structured=True,
    # The agent keeps the history and sends it every run; but the backend
    # holds the MCP servers and "always this session" grants, which a
    # reset ends (the next run starts the servers afresh).
    keeps_session=True,
    check_config=_check_config,
    label="an LLM backend",
)
