"""The tracker's dependency checks: every ``depends_on`` id names an item, and no chain of them is a cycle."""

from collections.abc import Iterator, Mapping, Sequence

from wavegit.core import schema, yamlread
from wavegit.core.errors import Problem
from wavegit.core.yamlread import Node


def problems(items: Sequence[tuple[str, tuple[str, ...]]], nodes: Sequence[Node],
             where: yamlread.Located) -> Iterator[tuple[int, Problem]]:
    """(position in ``items``, problem) for each unknown dependency id and each member of a cycle, recorded
    in ``where`` too; ``items`` holds (id, depends_on) of each item, ``nodes`` their mapping nodes."""
    ids = {item_id for item_id, _ in items}
    position = {item_id: i for i, (item_id, _) in reversed(list(enumerate(items)))}
    for i, ((item_id, deps), node) in enumerate(zip(items, nodes, strict=True)):
        for dep in deps:
            if dep not in ids:
                # Never the item itself: depending on itself is no way out.
                guess = schema.nearest(dep, tuple(ids - {item_id}))
                yield i, where.at(_dep_node(node, dep), f"depends on unknown id '{dep}'", item_id,
                                  f"did you mean '{guess}'?" if guess else "add that item or remove it")
    # The first item of an id stands for it (as in Tracker.get): a duplicate's depends_on naming the item it
    # was copied from is no cycle, and the duplicate id is reported already.
    graph = {item_id: [d for d in deps if d in ids]
             for i, (item_id, deps) in enumerate(items) if position[item_id] == i}
    for cycle in cycles(graph):
        text = " -> ".join((*cycle, cycle[0]))
        for member in cycle:
            dep = cycle[(cycle.index(member) + 1) % len(cycle)]
            yield position[member], where.at(_dep_node(nodes[position[member]], dep),
                                             f"dependency cycle: {text}", member,
                                             "remove one of these depends_on entries")


def cycles(graph: Mapping[str, list[str]]) -> list[tuple[str, ...]]:
    """One cycle per strongly connected component that has one (iterative, so deep chains are fine)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    found: list[tuple[str, ...]] = []
    for start in graph:
        if start in state:
            continue
        path: list[str] = [start]
        iters = [iter(graph[start])]
        state[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state.get(nxt) == 1:
                found.append(tuple(path[path.index(nxt):]))
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(graph[nxt]))
    return found


def _dep_node(item: Node, dep: str) -> Node:
    seq = yamlread.value_node(item, "depends_on")
    if seq is None:
        return item
    elements: list[Node] = seq.value if seq.id == "sequence" else []
    return next((e for e in elements if e.value == dep), seq)
