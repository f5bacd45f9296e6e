"""The first cycle in a directed graph of named nodes (tasks' ``dependsOn``, ``delegates``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable


def first_cycle(nodes: Iterable[str], edges: Callable[[str], Iterable[str]]) -> list[str] | None:
    """The first cycle met going depth-first from each node in order, along
    ``edges(node)`` in order, as the path that closes it (``[a, b, a]``);
    None when there is none. Iterative: a chain of thousands of nodes is far
    deeper than Python's recursion limit. ``edges`` must name nodes only."""
    done: set[str] = set()
    for start in nodes:
        if start in done:
            continue
        path = [start]  # the nodes being visited, outermost first
        position = {start: 0}
        unvisited = [iter(edges(start))]  # per node on the path, its edges left
        while unvisited:
            target = next(unvisited[-1], None)
            if target is None:
                finished = path.pop()
                del position[finished]
                done.add(finished)
                unvisited.pop()
            elif target in position:
                return [*path[position[target] :], target]
            elif target not in done:
                position[target] = len(path)
                path.append(target)
                unvisited.append(iter(edges(target)))
    return None
