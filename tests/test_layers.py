"""The house has floors: no import cycle among the project's modules, and every top-level module is
on a floor of the layers contract (``[tool.importlinter]`` in pyproject.toml; ``make test`` runs
``lint-imports``, which checks the contract itself)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def graph() -> grimp.ImportGraph:
    # As lint-imports sees it: lazy imports count, `if TYPE_CHECKING:` ones (never run) do not.
    return grimp.build_graph("pipeline", "flows", cache_dir=None,
                             exclude_type_checking_imports=CONTRACTS["exclude_type_checking_imports"])


def cycles(g: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(g.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(g.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(g.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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


def explain(g: grimp.ImportGraph, component: list[str]) -> str:
    """One loop through the component, with the lines of its imports: where to start cutting."""
    first = component[0]
    loop = []
    for importer in sorted(g.find_modules_directly_imported_by(first) & set(component)):
        back = g.find_shortest_chain(importer=importer, imported=first)
        if back:
            loop = [first, *back]
            break
    steps = []
    for importer, imported in zip(loop, loop[1:], strict=False):
        lines = sorted({d["line_number"] for d in g.get_import_details(importer=importer, imported=imported)})
        steps.append(f"{importer} -> {imported} (l.{', '.join(map(str, lines))})")
    return f"{len(component)} modules: {', '.join(component)}\n    e.g. " + "\n         ".join(steps)


def test_no_import_cycle() -> None:
    g = graph()
    found = cycles(g)
    assert not found, "import cycles:\n" + "\n".join(explain(g, c) for c in found)


def test_the_cycle_finder_finds_a_cycle() -> None:
    g = grimp.ImportGraph()
    for module in ("a", "a.b", "a.c", "a.d"):
        g.add_module(module)
    g.add_import(importer="a.b", imported="a.c", line_number=1, line_contents="import a.c")
    g.add_import(importer="a.c", imported="a.b", line_number=2, line_contents="import a.b")
    g.add_import(importer="a.d", imported="a.b", line_number=3, line_contents="import a.b")
    assert cycles(g) == [["a.b", "a.c"]]
    assert "a.b -> a.c (l.1)" in explain(g, ["a.b", "a.c"])


def test_every_top_level_module_is_on_a_floor() -> None:
    layers = next(c for c in CONTRACTS["contracts"] if c["type"] == "layers")["layers"]
    named = {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}
    top = {m for m in graph().modules if m.count(".") == 1 and m.startswith("pipeline.")} | {"flows"}
    assert top - named == set(), "add these modules to the layers contract in pyproject.toml"


def test_the_readme_draws_the_same_floors() -> None:
    def floor(text: str) -> list[str]:
        return [name.strip().removeprefix("pipeline.") for name in text.replace(":", "|").split("|")]

    layers = next(c for c in CONTRACTS["contracts"] if c["type"] == "layers")["layers"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    drawing = readme.split("The code is a house with floors", 1)[1].split("```", 2)[1]
    drawn = [floor(line.strip().split("  ", 1)[0]) for line in drawing.splitlines() if line.strip()]
    assert drawn == [floor(layer) for layer in layers]
