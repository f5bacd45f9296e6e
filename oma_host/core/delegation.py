"""Delegation, the core's part: where a run stands among delegations, and
the check of a set of agents' ``delegates`` that an agents file gets.

An LLM agent whose config lists ``delegates`` has a ``delegate`` tool
(``oma_host/llm/tools/delegate.py``) that hands one of them a task, a
string, as a fresh run, and answers with its output. The runs this makes
form a tree under the run a client started: its root. :class:`Lineage` is
one run's place in that tree, carried by the run's recorder, and holds the
bounds:

- **depth**: each agent's ``delegation.maxDepth`` (default 3) is how many
  levels of delegation may go on beneath its runs; a delegate gets the
  smaller of its own and what its caller had left, less one. A run with no
  room left is refused a delegation (an error result to its model).
- **fan-out**: the root's ``delegation.maxCalls`` (default 16) is how many
  delegations the whole tree may make. A run's tool calls run one after
  another, so at most one delegation per run is in flight, and at most the
  depth along the tree.

Cycles: a door refuses what it can see at creation (an agents file whose
``delegates`` loop, :func:`check_delegate_graph`; on the JSON-RPC door a
delegate is an agent created earlier, so no loop can be made); the depth
bound ends any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from oma_host.core.config import (
    DEFAULT_DELEGATION_DEPTH,
    DEFAULT_MAX_DELEGATIONS,
    AgentConfig,
    DelegationConfig,
)
from oma_host.core.cycles import first_cycle
from oma_host.core.errors import InvalidParamsError


@dataclass
class _Count:
    """The delegations a tree has made, shared by every run in it."""

    made: int = 0


@dataclass(frozen=True)
class Lineage:
    """A run's place in a delegation tree (see the module docstring):
    ``depth``, the delegations above it (0: a client started it); ``room``,
    the levels that may still go on beneath it; ``limit``, the delegations
    the whole tree may make."""

    depth: int
    room: int
    limit: int
    _count: _Count = field(default_factory=_Count, repr=False)

    @classmethod
    def root(cls, settings: DelegationConfig | None) -> Lineage:
        """The lineage of a run a client started, by its agent's ``delegation``."""
        if settings is None:
            return cls(0, DEFAULT_DELEGATION_DEPTH, DEFAULT_MAX_DELEGATIONS)
        return cls(0, settings.max_depth, settings.max_calls)

    @property
    def made(self) -> int:
        """The delegations the tree has made so far."""
        return self._count.made

    def refusal(self) -> str | None:
        """Why this run may not delegate now, or None when it may."""
        if self.room < 1:
            return (
                f"this run is {self.depth} delegation(s) deep, the most allowed here "
                "(delegation.maxDepth); do the task yourself or answer with what you have"
            )
        if self._count.made >= self.limit:
            return (
                f"{self.limit} delegations have been made for this request, the most "
                "allowed (delegation.maxCalls); go on without delegating"
            )
        return None

    def child(self, settings: DelegationConfig | None) -> Lineage:
        """The lineage of a delegate's run (the delegate's own ``delegation``
        may lower its room), counted as one delegation of the tree."""
        own = DEFAULT_DELEGATION_DEPTH if settings is None else settings.max_depth
        self._count.made += 1
        return Lineage(self.depth + 1, min(self.room - 1, own), self.limit, self._count)


def check_delegate_graph(configs: Sequence[AgentConfig], where: str = "$") -> None:
    """Every name in a set of agents' ``delegates`` is one of them, and no
    chain of delegates comes back to where it started; InvalidParamsError
    naming the place (``$[0].delegates[1]``) and the loop otherwise."""
    index_of = {config.name: index for index, config in enumerate(configs)}
    for index, config in enumerate(configs):
        for position, name in enumerate(config.delegates or []):
            if name not in index_of:
                known = ", ".join(index_of)
                raise InvalidParamsError(
                    f"{where}[{index}].delegates[{position}]: no agent named {name!r} "
                    f"(agents: {known})"
                )
    by_name = {config.name: config for config in configs}
    loop = first_cycle(by_name, lambda name: by_name[name].delegates or [])
    if loop is not None:
        raise InvalidParamsError(
            f"{where}[{index_of[loop[0]]}].delegates: the delegates form a loop: "
            + " -> ".join(loop)
        )
