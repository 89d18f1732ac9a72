"""The package has no import cycles, objectives import no method, and config modules import no torch.

Two graphs of ``forgetless`` imports, both read from the source:

* the **module graph** holds what runs when a module is imported: module-level imports (not those
  inside functions or under ``if TYPE_CHECKING``), modelling that importing ``a.b.c`` first runs
  ``a/__init__`` and ``a/b/__init__`` (the importer depends on those package ``__init__`` modules as
  well as on ``a.b.c``, except on its own ancestor packages, already being imported when it runs).
  It must have no cycle at all, and neither may the same graph of files with the imports inside
  functions added (a function-level import that closes a circle of files, as
  ``models/io.py → model_card.py → loading.py → io.py`` did, hides the circle without removing it);
* the **layer graph** collapses modules into the package's units (``forgetless.training``,
  ``forgetless.objectives``, ``forgetless.pipeline``, …) and counts imports inside functions too: a
  function-level import that closes a cycle dodges it without removing it. It must have no cycle
  but the back-arrows of ``KNOWN_CYCLES``.

With the imports inside functions, a **string hook** counts as an import too: a string constant naming a
function of a forgetless module (``"forgetless.report.honest:llm_rows"``, imported by ``importlib`` when
called) is an arrow to that module, so a table that names an upper layer's functions by string closes the
cycle it hides (the upper layer registers them instead: ``data/task_kinds.TaskKind.register``).

A cycle fails the test and is printed.
"""
import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "forgetless"

# (importer module, imported module or package): back-arrows allowed in the layer graph. Empty: the
# units of the package import each other without a cycle, function-level imports included.
KNOWN_CYCLES: list[tuple[str, str]] = []
HOOK_STRING = re.compile(r"(forgetless(?:\.\w+)+):\w+")  # "module:function", imported when called


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_level_imports(tree: ast.Module, functions: bool = False):
    """Import nodes that run when the module is imported: not inside a function (or lambda), not
    under ``if TYPE_CHECKING``; class bodies, ``try`` and other ``if`` blocks count.
    ``functions``: the imports inside functions as well (those run when the function is called)."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not functions:
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        pending.extend(ast.iter_child_nodes(node))


def with_packages(target: str, importer: str) -> set[str]:
    """``a.b.c`` → {``a``, ``a.b``, ``a.b.c``}, minus the importer's own ancestor packages."""
    parts = target.split(".")
    ancestors = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 1)}
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} - ancestors


def string_hooks(tree: ast.Module) -> list[str]:
    """The modules that string constants of ``tree`` name as ``"module:function"`` hooks."""
    return [match.group(1) for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            for match in [HOOK_STRING.fullmatch(node.value)] if match]


def import_graph(functions: bool = False) -> dict[str, set[str]]:
    """``{module: modules whose code runs when it is imported}`` within forgetless (``functions``:
    also when its functions run, string hooks included)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        if functions:
            for target in string_hooks(tree):
                graph[name] |= {m for m in with_packages(target, name) if m in modules and m != name}
        for node in module_level_imports(tree, functions):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                graph[name] |= {m for m in with_packages(target, name) if m in modules and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, …, a]``, or None."""
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

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


# ----- the guard's own model, on hand-made packages ------------------------------------------------
def test_guard_models_package_inits_and_skips_function_imports(tmp_path, monkeypatch):
    root = tmp_path / "forgetless"
    files = {
        "__init__.py": "",
        "training/__init__.py": "",
        "training/trainer.py": "from ..objectives.base import Objective\n",
        "objectives/__init__.py": "from . import rmc\n",  # an eager package __init__
        "objectives/base.py": "",
        "objectives/rmc.py": "def f():\n    from ..training import trainer\n",
        "report/__init__.py": "",
        "report/card.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..training import trainer\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", root)
    graph = import_graph()
    assert graph["forgetless.training.trainer"] == {"forgetless.objectives", "forgetless.objectives.base"}
    assert graph["forgetless.objectives.rmc"] == set() and graph["forgetless.report.card"] == set()
    assert find_cycle(graph) is None
    assert find_cycle(import_graph(functions=True)) == [  # the circle closed by the import inside a function
        "forgetless.objectives", "forgetless.objectives.rmc", "forgetless.training.trainer", "forgetless.objectives"]
    (root / "objectives/rmc.py").write_text("from ..training.trainer import fine_tune\n")  # now at module level
    assert find_cycle(import_graph()) == ["forgetless.objectives", "forgetless.objectives.rmc",
                                          "forgetless.training.trainer", "forgetless.objectives"]


def test_guard_counts_string_hooks_as_imports_inside_functions(tmp_path, monkeypatch):
    """A table of a lower layer naming an upper layer's function by string (what ``data/task_kinds.py`` of
    a117818 did: ``"forgetless.report.llm_section:llm_section"``) closes a cycle of the layer graph."""
    root = tmp_path / "forgetless"
    files = {
        "__init__.py": "",
        "data/__init__.py": "",
        "data/kinds.py": 'HOOKS = {"compare": "forgetless.report.section:compare"}\nNOTE = "see forgetless.report"\n',
        "report/__init__.py": "",
        "report/section.py": "from ..data.kinds import HOOKS\n\ndef compare():\n    return HOOKS\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", root)
    assert import_graph()["forgetless.data.kinds"] == set()  # module level: nothing imported
    assert import_graph(functions=True)["forgetless.data.kinds"] == {"forgetless.report", "forgetless.report.section"}
    assert find_cycle(layer_graph([])) == ["forgetless.data", "forgetless.report", "forgetless.data"]


# ----- the package ------------------------------------------------------------------------------
def unit(module: str) -> str:
    """The unit of the layer graph a module belongs to: ``forgetless.<first name>``."""
    return ".".join(module.split(".")[:2])


def layer_graph(known: list[tuple[str, str]]) -> dict[str, set[str]]:
    """Units and the units they import (function-level imports included), without the ``known``
    back-arrows (an importer module and everything it imports under the named module / package)."""
    graph: dict[str, set[str]] = {}
    for importer, imported in import_graph(functions=True).items():
        for target in imported:
            if any(importer == a and (target == b or target.startswith(b + ".")) for a, b in known):
                continue
            if unit(target) not in (unit(importer), "forgetless"):
                graph.setdefault(unit(importer), set()).add(unit(target))
        graph.setdefault(unit(importer), set())
    return graph


def test_module_graph_is_acyclic():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle (module level): " + " → ".join(cycle)


def test_no_circle_of_files_even_through_imports_inside_functions():
    cycle = find_cycle(import_graph(functions=True))
    assert cycle is None, "circle of files (imports inside functions included): " + " → ".join(cycle)


def test_objectives_import_no_method():
    """An objective may use the shared pruning code (``methods/_shared``) and the method contract
    (``methods/base.py``), never a method's own folder (RMC's difficulty once imported magnitude's)."""
    graph = import_graph(functions=True)
    allowed = ("forgetless.methods", "forgetless.methods.base", "forgetless.methods._shared")
    found = sorted(f"{m} → {d}" for m in graph if m.startswith("forgetless.objectives") for d in graph[m]
                   if d.startswith("forgetless.methods") and not any(d == a or d.startswith(a + ".") for a in allowed[1:])
                   and d != allowed[0])
    assert found == []


def test_shared_method_code_imports_no_method():
    """``methods/_shared`` sits below the methods: it imports the method contract and itself, never a method's
    own folder (the head-pruning runner once took the head layout from ``rahp``)."""
    graph = import_graph(functions=True)
    below = ("forgetless.methods.base", "forgetless.methods._shared")
    found = sorted(f"{m} → {d}" for m in graph if m.startswith("forgetless.methods._shared") for d in graph[m]
                   if d.startswith("forgetless.methods.") and not any(d == b or d.startswith(b + ".") for b in below))
    assert found == []


def test_layer_graph_is_acyclic_but_for_known_back_arrows():
    full = import_graph(functions=True)
    for importer, imported in KNOWN_CYCLES:
        assert any(t == imported or t.startswith(imported + ".") for t in full[importer]), \
            f"{importer} no longer imports {imported}: remove it from KNOWN_CYCLES"
    cycle = find_cycle(layer_graph(KNOWN_CYCLES))
    assert cycle is None, "cycle between the package's units (imports inside functions included): " + \
        " → ".join(cycle)
    for i in range(len(KNOWN_CYCLES)):  # every entry is still needed: without it, a cycle comes back
        assert find_cycle(layer_graph(KNOWN_CYCLES[:i] + KNOWN_CYCLES[i + 1:])) is not None, \
            f"KNOWN_CYCLES entry {KNOWN_CYCLES[i]} closes no cycle any more: remove it"


def test_objective_contract_is_below_the_objectives():
    graph = import_graph()
    training = [m for m in graph if m.startswith("forgetless.training")]
    assert not {d for m in training for d in graph[m] if d.startswith("forgetless.objectives")}
    assert graph["forgetless.objectives"] == set()  # a docstring: importing a family imports no other


def test_config_modules_import_no_torch():
    configs = sorted(module_name(p) for p in PACKAGE.glob("objectives/*/config.py"))
    assert "forgetless.objectives.focal.config" in configs and len(configs) >= 8
    code = ("import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
            "heavy = sorted(m for m in ('torch', 'transformers', 'numpy') if m in sys.modules)\nprint(heavy)")
    out = subprocess.run([sys.executable, "-c", code, *configs], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"a config module imports {out.stdout.strip()}"


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
