"""A dependency graph between operations and its cycles (Elle's approach, reduced to what the
checker needs: write-write and write-read edges, one example cycle per strongly connected
component)."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from itertools import pairwise

Edge = tuple[int, str, int]  # source, kind ("ww" or "wr"), target


@dataclass
class Graph:
    edges: dict[int, dict[int, set[str]]] = field(default_factory=lambda: defaultdict(dict))

    def add(self, source: int, target: int, kind: str) -> None:
        self.edges[source].setdefault(target, set()).add(kind)
        self.edges.setdefault(target, {})

    def successors(self, node: int, kinds: set[str] | None = None) -> list[int]:
        return [
            target
            for target, edge_kinds in self.edges.get(node, {}).items()
            if kinds is None or edge_kinds & kinds
        ]


def components(graph: Graph, kinds: set[str] | None = None) -> list[list[int]]:
    """Strongly connected components of more than one node (Tarjan's, iterative)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    found: list[list[int]] = []
    counter = 0
    for root in list(graph.edges):
        if root in index:
            continue
        work = [(root, iter(graph.successors(root, kinds)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for target in successors:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph.successors(target, kinds))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _cycle_in(graph: Graph, members: set[int], kinds: set[str] | None) -> list[Edge]:
    """A shortest cycle through the component's first node (breadth-first)."""
    start = min(members)
    parents: dict[int, int] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in graph.successors(node, kinds):
            if target not in members:
                continue
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(parents[path[-1]])
                nodes = [*reversed(path), start]
                return [
                    (source, _kind(graph, source, target, kinds), target)
                    for source, target in pairwise(nodes)
                ]
            if target not in parents:
                parents[target] = node
                queue.append(target)
    raise AssertionError("a strongly connected component without a cycle")


def _kind(graph: Graph, source: int, target: int, kinds: set[str] | None) -> str:
    available = (
        graph.edges[source][target] if kinds is None else graph.edges[source][target] & kinds
    )
    return "ww" if "ww" in available else sorted(available)[0]


def cycles(graph: Graph) -> list[list[Edge]]:
    """One cycle per component: write-write cycles first (G0), then, for components with
    none, a cycle using write-read edges too (G1c)."""
    found = []
    ww_members: set[int] = set()
    for component in components(graph, {"ww"}):
        ww_members.update(component)
        found.append(_cycle_in(graph, set(component), {"ww"}))
    for component in components(graph):
        if not ww_members.intersection(component):
            found.append(_cycle_in(graph, set(component), None))
    return found
