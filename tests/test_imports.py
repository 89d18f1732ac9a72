"""The package has no import cycles: the graph of every ``forgetless`` import (module level and
inside functions alike) is acyclic, and every module imports on its own in a fresh interpreter in
dependency order (leaves first)."""
import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "forgetless"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        source = path.read_text()
        if path.name == "__init__.py" and "pkgutil.iter_modules" in source:  # imports every submodule
            graph[name] |= {m for m in modules if m.rsplit(".", 1)[0] == name}
        for node in ast.walk(ast.parse(source)):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_import_graph_is_acyclic():
    cycle = find_cycle(import_graph())
    assert cycle is None, " → ".join(cycle)


def test_every_module_imports_alone_in_dependency_order():
    graph = import_graph()
    order, seen = [], set()

    def place(node):
        if node in seen:
            return
        seen.add(node)
        for dep in sorted(graph[node]):
            place(dep)
        order.append(node)

    for node in sorted(graph):
        if not node.endswith("__main__"):  # a module that runs the command when imported
            place(node)
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\nprint('ok')"
    out = subprocess.run([sys.executable, "-c", code, *order], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
