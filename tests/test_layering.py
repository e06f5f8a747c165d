"""The package order written in docs/architecture.md holds in the code.

Every import of every module under src/zkafka counts: top-level, function-local and under
`TYPE_CHECKING` alike (a type-only cycle is still a cycle a reader has to untangle). A package may
import only the packages listed above it in the table; modules may not import each other in a cycle,
inside a package or across packages.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "zkafka"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def documented_order() -> list[str]:
    """Package names in the order of the table under "Packages and their dependencies"."""
    text = ARCHITECTURE.read_text()
    section = text.split("## Packages and their dependencies", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `zkafka\.(\w+)` \|", section, flags=re.MULTILINE)


def module_name(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, src: Path = SRC, modules: set[str] | None = None) -> set[str]:
    """Every zkafka module `path` imports, wherever the import statement is. `from p import n` counts
    as importing module `p.n` when there is one, else `p` itself (a name `p/__init__.py` defines)."""
    modules = modules if modules is not None else {module_name(p, src) for p in src.rglob("*.py")}
    here = module_name(path, src)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
    return {m for m in found if m in modules and m != here}


def graph() -> dict[str, set[str]]:
    """module -> the zkafka modules it imports."""
    modules = {module_name(p) for p in SRC.rglob("*.py")}
    return {module_name(p): imports_of(p, SRC, modules) for p in sorted(SRC.rglob("*.py"))}


def package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_package_is_in_the_documented_order() -> None:
    order = documented_order()
    assert len(order) == len(set(order)), order
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(order), f"undocumented: {packages - set(order)}, gone: {set(order) - packages}"


def test_imports_point_up_the_documented_order() -> None:
    rank = {name: i for i, name in enumerate(documented_order())}
    wrong = []
    for module, targets in graph().items():
        mine = package_of(module)
        for target in targets:
            theirs = package_of(target)
            if mine is None or theirs is None or mine == theirs:
                continue
            if rank[theirs] > rank[mine]:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against docs/architecture.md's order:\n" + "\n".join(sorted(wrong))


def test_no_module_import_cycles() -> None:
    edges = graph()
    # Importing a package runs its __init__, so `a.b` depending on `a` is only a cycle if `a`'s
    # __init__ comes back to `a.b`; the plain module graph says exactly that.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_only_the_cli_knows_the_broker() -> None:
    """Nothing but the CLI imports `zkafka.server.broker`: request handlers get a
    `services.BrokerServices` in their context and the broker's parts get narrow collaborators, so
    the `Broker` is left with start/stop ordering. (The cycle check above also catches a handler
    importing it, as the broker imports the handlers; this names the rule, and covers modules the
    broker does not import.)"""
    importers = sorted(m for m, targets in graph().items() if "zkafka.server.broker" in targets)
    allowed = [m for m in importers if package_of(m) == "cli"]
    assert importers == allowed, f"modules importing zkafka.server.broker: {importers}"


def test_the_checker_sees_type_checking_and_local_imports(tmp_path: Path) -> None:
    """The rule is only as good as its import reader."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from zkafka.server.broker import Broker\n"
        "def f():\n    import zkafka.cli.main\n"
        "from . import store\n"
    )
    src = tmp_path / "zkafka"
    for module in ("server/broker.py", "cli/main.py", "coordinator/store.py", "coordinator/probe.py"):
        (src / module).parent.mkdir(parents=True, exist_ok=True)
        (src / module).touch()
    path = src / "coordinator" / "probe.py"
    path.write_text(source)
    found = imports_of(path, src)
    assert {"zkafka.server.broker", "zkafka.cli.main", "zkafka.coordinator.store"} <= found
