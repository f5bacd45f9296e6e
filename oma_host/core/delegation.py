"""Delegation's bounds: a run's place among delegations (:class:`Lineage`), the delegate check.

A ``delegate`` call runs another agent as a fresh run beneath the caller;
:class:`Lineage` bounds the tree by depth (``delegation.maxDepth``), by the
delegations the whole tree may make (``delegation.maxCalls``) and by the
caller's remaining budgets. The depth bound also ends cycles the doors cannot
see at creation, across hosts: every process a run starts gets
``OMA_HOST_DELEGATION`` (:meth:`Lineage.environment`), and a host started with
it runs its agents one level down (:func:`inherited_limits`,
:func:`host_refusal`). docs/tools.md, "Delegation".
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from oma_host.core.config import (
    DEFAULT_DELEGATION_DEPTH,
    DEFAULT_MAX_DELEGATIONS,
    AgentConfig,
    DelegationConfig,
)
from oma_host.core.cycles import first_cycle
from oma_host.core.errors import InvalidParamsError

# The limits a process started by a run carries to a host it may start.
LIMITS_VARIABLE = "OMA_HOST_DELEGATION"
_LIMITS = re.compile(r"depth=(\d{1,4}),calls=(\d{1,6})")


@dataclass(frozen=True)
class InheritedLimits:
    """What ``OMA_HOST_DELEGATION`` gives this host: ``depth``, the levels
    that may go on beneath the run that started it (this host's runs are
    the first of them), and ``calls``, the delegations its tree had left."""

    depth: int
    calls: int
    text: str  # the variable as given, for messages


def inherited_limits(environ: Mapping[str, str] | None = None) -> InheritedLimits | None:
    """The limits this host was started with, None without the variable. A
    value that is not ``depth=D,calls=C`` leaves no room at all: the host
    was started beneath another's run and cannot tell how deep."""
    text = (os.environ if environ is None else environ).get(LIMITS_VARIABLE)
    if text is None:
        return None
    match = _LIMITS.fullmatch(text.strip())
    if match is None:
        return InheritedLimits(0, 0, text)
    return InheritedLimits(int(match[1]), int(match[2]), text)


def host_refusal() -> str | None:
    """Why this host may run no agent (its runs fail with it), or None."""
    limits = inherited_limits()
    if limits is None or limits.depth > 0:
        return None
    if _LIMITS.fullmatch(limits.text.strip()) is None:
        return (
            f"{LIMITS_VARIABLE}={limits.text!r} is not depth=D,calls=C: this host was "
            "started beneath another host's run and runs no agent"
        )
    return (
        f"this host was started beneath a run that may delegate no deeper "
        f"({LIMITS_VARIABLE}={limits.text}, delegation.maxDepth of the host that started "
        "it): it runs no agent; do the task in the run that started it"
    )


def _smaller(first: float | None, second: float | None) -> float | None:
    return second if first is None else first if second is None else min(first, second)


@dataclass
class _Count:
    """The delegations a tree has made, shared by every run in it."""

    made: int = 0


@dataclass(frozen=True)
class Lineage:
    """A run's place in a delegation tree (see the module docstring):
    ``depth``, the delegations above it (0: a client started it); ``room``,
    the levels that may still go on beneath it; ``limit``, the delegations
    the whole tree may make; ``tokens`` and ``cost``, what its callers left
    it to spend (None: no caller's budget bounds it)."""

    depth: int
    room: int
    limit: int
    _count: _Count = field(default_factory=_Count, repr=False)
    tokens: int | None = None
    cost: float | None = None
    # The limits this host was started with, when they lowered room or limit.
    inherited: InheritedLimits | None = None

    @classmethod
    def root(cls, settings: DelegationConfig | None) -> Lineage:
        """The lineage of a run a client started, by its agent's
        ``delegation`` and the limits the host was started with."""
        room = DEFAULT_DELEGATION_DEPTH if settings is None else settings.max_depth
        limit = DEFAULT_MAX_DELEGATIONS if settings is None else settings.max_calls
        inherited = inherited_limits()
        if inherited is not None and (inherited.depth - 1 < room or inherited.calls < limit):
            room = max(0, min(room, inherited.depth - 1))
            limit = min(limit, inherited.calls)
        else:
            inherited = None
        return cls(0, room, limit, inherited=inherited)

    @property
    def made(self) -> int:
        """The delegations the tree has made so far."""
        return self._count.made

    def refusal(self) -> str | None:
        """Why this run may not delegate now, or None when it may."""
        started = (
            ""
            if self.inherited is None
            else f" (this host was started with {LIMITS_VARIABLE}={self.inherited.text})"
        )
        if self.room < 1:
            return (
                f"this run is {self.depth} delegation(s) deep, the most allowed here "
                f"(delegation.maxDepth){started}; do the task yourself or answer with what "
                "you have"
            )
        if self._count.made >= self.limit:
            return (
                f"{self.limit} delegations have been made for this request, the most "
                f"allowed (delegation.maxCalls){started}; go on without delegating"
            )
        return None

    def child(
        self,
        settings: DelegationConfig | None,
        *,
        tokens: int | None = None,
        cost: float | None = None,
    ) -> Lineage:
        """The lineage of a delegate's run (the delegate's own ``delegation``
        may lower its room), counted as one delegation of the tree; ``tokens``
        and ``cost``: what the caller has left of its budgets."""
        own = DEFAULT_DELEGATION_DEPTH if settings is None else settings.max_depth
        self._count.made += 1
        return Lineage(
            self.depth + 1,
            min(self.room - 1, own),
            self.limit,
            self._count,
            tokens,
            cost,
            self.inherited,
        )

    def environment(self) -> dict[str, str]:
        """The variable every process this run starts gets: a host started
        by it runs one level beneath this run (see the module docstring)."""
        left = max(0, self.limit - self._count.made)
        return {LIMITS_VARIABLE: f"depth={max(0, self.room)},calls={left}"}

    def budgets(self, tokens: int | None, cost: float | None) -> tuple[int | None, float | None]:
        """An agent's ``maxTokenBudget`` and ``maxCostBudget`` for this run:
        the smaller of its own and what its callers left it."""
        token_budget = _smaller(tokens, self.tokens)
        return (None if token_budget is None else int(token_budget)), _smaller(cost, self.cost)


def host_environment() -> dict[str, str]:
    """The variable for a process the host starts outside any run (an
    agent's MCP servers): as for a run a client started with the default
    bounds, so a host it starts is still one level down."""
    return Lineage.root(None).environment()


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
