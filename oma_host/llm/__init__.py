"""The LLM backend: agents without a ``backend`` run the loop in
:mod:`oma_host.llm.loop` against a provider adapter.

Importing this package registers the ``"llm"`` kind with the core's backend
registry (:mod:`oma_host.core.backends`). It stays light: the loop, the tools
and the provider stack are imported when the first LLM agent is checked or
built.
"""

from __future__ import annotations

from oma_host.core.backends import LLM_KIND, Backend, BackendContext, BackendEntry, register_backend
from oma_host.core.config import AgentConfig


def _check_config(config: AgentConfig) -> None:
    """What can be refused at construction: an unknown provider or tool, an
    invalid outputSchema."""
    from oma_host.llm.tools import ToolRegistry
    from oma_host.providers import check_provider

    check_provider(config.provider)
    ToolRegistry(config.tools, config.cwd)
    if config.output_schema is not None:
        from oma_host.llm.loop import check_output_schema

        check_output_schema(config.output_schema)


def _build(config: AgentConfig, context: BackendContext) -> Backend:
    from oma_host.llm.loop import LLMBackend

    return LLMBackend(config)


register_backend(
    BackendEntry(
        LLM_KIND,
        _build,
        accepts_structured=True,
        keeps_session=False,  # the agent keeps the history and sends it every run
        check_config=_check_config,
    )
)
