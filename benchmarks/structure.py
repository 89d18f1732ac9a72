"""The structure of the package in numbers (issue 33's before / after note), read from the source
with ``ast``, nothing imported:

* **files** and **lines** (all lines, per top folder of ``forgetless/``);
* **imports**: import edges between forgetless files (``a.py`` imports something of ``b.py``), split
  into module-level ones and function-level ones (those inside a function: they run when the
  function is called and hide the call graph), and the import statements inside functions that
  name a forgetless module;
* **import layers**: the longest chain of the file graph (module- and function-level imports) once
  its circles are collapsed, i.e. how deep the stack of files is;
* **circles**: groups of files that import each other round a loop (strongly connected components
  of more than one file, function-level imports included), and the **imports that run back up**:
  the edges inside such a group (without them the graph is a stack);
* **longest functions**: the ten longest function bodies (lines), and how many are over 40 lines;
* **card lookups**: ``card["`` in the package and in ``tests/`` (the report card read as an untyped dict); and
  by ``ast`` (issue 53): lookups on a card read as a dict (``card["…"]``, ``card.get(…)``, ``(card.get(…) or
  {}).get(…)`` chains, ``"llm" in card``), lookups in the free JSON fields of a typed card, functions whose
  ``card`` parameter is a ``dict``, and probes for the LLM suite by key (``"llm" in …``, ``.get("llm")``);
* **task-kind branches**: comparisons with the string ``"lm-eval"`` (``task.kind == "lm-eval"``, a card's
  ``kind.task != "lm-eval"``): code that asks which kind of task it has instead of asking the kind;
* **kind-name branches**: comparisons with the name of any model or task kind (``kind.name == "causal-lm"``,
  ``task.kind != "classification"``) outside the kinds' own modules (``kinds/``, ``data/task_kinds.py``);
* **string hooks**: string constants naming a function of a forgetless module
  (``"forgetless.report.honest:llm_rows"``), imports the import graph cannot see;
* **weight-type branches**: comparisons of a ``weight_type`` (``c.weight_type == "fp8"``,
  ``config.get("weight_type") == …``) outside ``forgetless/quantization/``: code that asks which codes a format
  has instead of asking the format (``quantization.format.QuantFormat``).

    python benchmarks/structure.py [--package forgetless] [--json]
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module):
    """(node, inside a function) for every import of a module that runs (not those under ``if TYPE_CHECKING``:
    types only, as ``tests/test_imports.py`` counts them)."""
    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                      ast.Lambda)))
    yield from visit(tree, False)


def file_graph(package: Path) -> tuple[dict, dict]:
    """``{module: {imported module: 'module' | 'function'}}`` between the package's files (a package
    ``__init__`` counts as the file it is), and ``{module: path}``."""
    modules = {module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, dict[str, str]] = {name: {} for name in modules}
    statements = 0
    for name, path in modules.items():
        own_package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node, in_function in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = own_package.split(".")[:len(own_package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            statements += in_function and any(t.startswith(package.name) for t in targets)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    level = "function" if in_function else "module"
                    if graph[name].get(target) != "module":
                        graph[name][target] = level
    return graph, modules, statements


def strongly_connected(graph: dict) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    component.append(item)
                    if item == node:
                        break
                out.append(sorted(component))
    return out


def layers(graph: dict, components: list[list[str]]) -> int:
    """Length of the longest chain of files once every circle is one node."""
    owner = {m: i for i, comp in enumerate(components) for m in comp}
    edges = defaultdict(set)
    for a, targets in graph.items():
        for b in targets:
            if owner[a] != owner[b]:
                edges[owner[a]].add(owner[b])
    depth: dict[int, int] = {}

    def visit(node):
        if node not in depth:
            depth[node] = 0
            depth[node] = 1 + max((visit(n) for n in edges[node]), default=0)
        return depth[node]

    sys.setrecursionlimit(10_000)
    return max(visit(i) for i in range(len(components)))


def functions(modules: dict, package: Path) -> list[tuple[int, str]]:
    """Every function's length in lines, longest first."""
    found = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(package.parent)}:{node.name}"))
    return sorted(found, reverse=True)


def kind_branches(modules: dict) -> int:
    """Comparisons (``==``, ``!=``, ``in``) with the constant ``"lm-eval"``."""
    count = 0
    for path in modules.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
                values += [e for v in values if isinstance(v, (ast.Tuple, ast.List, ast.Set)) for e in v.elts]
                count += any(isinstance(v, ast.Constant) and v.value == "lm-eval" for v in values)
    return count


KIND_NAMES = ("classifier", "seq2seq", "causal-lm", "classification", "generation", "lm-eval")
KINDS_OWN = ("kinds/", "data/task_kinds.py")
HOOK_STRING = re.compile(r"forgetless(\.\w+)+:\w+")  # "module:function", imported when called


def kind_name_branches(modules: dict, package: Path) -> list[str]:
    """``file:line`` of each comparison (``==``, ``!=``, ``in``) with a kind's name outside ``KINDS_OWN``."""
    found = []
    for path in modules.values():
        where = path.relative_to(package).as_posix()
        if where.startswith(KINDS_OWN):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
                values += [e for v in values if isinstance(v, (ast.Tuple, ast.List, ast.Set)) for e in v.elts]
                if any(isinstance(v, ast.Constant) and v.value in KIND_NAMES for v in values):
                    found.append(f"{where}:{node.lineno}")
    return sorted(found)


def string_hooks(modules: dict, package: Path) -> list[str]:
    """``file:line string`` of each string constant naming a function of a forgetless module (``HOOK_STRING``)."""
    return sorted(f"{path.relative_to(package).as_posix()}:{node.lineno} {node.value}" for path in modules.values()
                  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and HOOK_STRING.fullmatch(node.value))


def weight_type_branches(modules: dict, package: Path) -> int:
    """Comparisons one side of which reads a ``weight_type`` (attribute, name or ``"weight_type"`` key), outside
    the quantization library."""
    count = 0
    for path in modules.values():
        if path.relative_to(package).parts[0] == "quantization":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [ast.unparse(v) for v in (node.left, *node.comparators)]
                count += any("weight_type" in side for side in sides)
    return count


def card_lookups(folder: Path) -> int:
    return sum(path.read_text(encoding="utf-8").count('card["') for path in folder.rglob("*.py"))


CARD_NAMES = {"card", "cards"}  # the names a report card goes by in the package (``cards[name]``: one of them)


def _lookup_receiver(node) -> ast.AST | None:
    """The expression a dict lookup reads (``x["k"]``, ``x.get("k")``, ``"k" in x``), else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.func.value
    if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        return node.comparators[0]
    return None


def _card_root(node, through_attributes: bool) -> bool:
    """Whether ``node`` is a card read as a dict (``card``, ``card["a"]``, ``card.get("a")``, ``(card.get("a") or
    {})``, ``cards[name]``), or with ``through_attributes``, a free JSON field of a typed card (``card.params.base``)."""
    while True:
        if isinstance(node, ast.Name):
            return node.id in CARD_NAMES
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            node = node.values[0]
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            node = node.func.value
        elif isinstance(node, ast.Attribute) and through_attributes:
            node = node.value
        else:
            return False


def card_reads(modules: dict, package: Path) -> dict:
    """How the package reads report cards (issue 53): ``card_dict_lookups``, lookups on a card as a dict
    (``card["task"]``, ``card.get("llm")``, ``(card.get("bias") or {}).get("f_bias")``, ``"llm" in card``) outside
    the JSON reader; ``card_json_lookups``, lookups in the free JSON fields of a typed card
    (``card.params.base["total"]``: a set's metrics, a method's section, the speed's figures); ``card_dict_params``,
    functions whose ``card`` parameter is annotated ``dict``; ``llm_probes``, ``"llm" in …``, ``….get("llm")`` and
    ``…["llm"]`` on any dict (a card, a comparison, a result: asking for the LLM suite by key)."""
    counts = {"card_dict_lookups": 0, "card_json_lookups": 0, "card_dict_params": 0, "llm_probes": 0}
    for path in modules.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            receiver = _lookup_receiver(node)
            if receiver is not None and _card_root(receiver, through_attributes=False):
                counts["card_dict_lookups"] += 1
            elif receiver is not None and _card_root(receiver, through_attributes=True):
                counts["card_json_lookups"] += 1
            key = node.slice if isinstance(node, ast.Subscript) else node.args[0] if isinstance(node, ast.Call) \
                and node.args else node.left if isinstance(node, ast.Compare) else None
            if receiver is not None and isinstance(key, ast.Constant) and key.value == "llm":
                counts["llm_probes"] += 1
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                counts["card_dict_params"] += sum(
                    1 for a in node.args.args + node.args.kwonlyargs
                    if a.arg == "card" and a.annotation is not None and "dict" in ast.unparse(a.annotation))
    return counts


def measure(package: Path) -> dict:
    graph, modules, statements = file_graph(package)
    components = strongly_connected(graph)
    circles = [c for c in components if len(c) > 1]
    in_circle = {m: i for i, c in enumerate(circles) for m in c}
    back = sorted(f"{a} → {b} ({level})" for a, targets in graph.items() for b, level in targets.items()
                  if a in in_circle and in_circle.get(b) == in_circle[a])
    lines = defaultdict(int)
    for path in modules.values():
        parts = path.relative_to(package).parts
        lines[parts[0] if len(parts) > 1 else "(top)"] += len(path.read_text(encoding="utf-8").splitlines())
    return {"files": len(modules), "lines": sum(lines.values()),
            "imports": sum(len(t) for t in graph.values()),
            "imports_function_level": sum(1 for t in graph.values() for level in t.values() if level == "function"),
            "import_statements_in_functions": statements,
            "import_layers": layers(graph, components), "circles": [" ↔ ".join(c) for c in circles],
            "imports_back_up": back, "lines_per_folder": dict(sorted(lines.items())),
            "longest_functions": [f"{n:4d}  {where}" for n, where in functions(modules, package)[:10]],
            "functions_over_40_lines": sum(1 for n, _ in functions(modules, package) if n > 40),
            "card_lookups_package": card_lookups(package),
            "card_lookups_tests": card_lookups(package.parent / "tests") if (package.parent / "tests").is_dir() else None,
            **card_reads(modules, package),
            "lm_eval_branches": kind_branches(modules),
            "kind_name_branches": kind_name_branches(modules, package),
            "string_hooks": string_hooks(modules, package),
            "weight_type_branches": weight_type_branches(modules, package)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default=str(ROOT / "forgetless"), help="the package folder")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    result = measure(Path(args.package).resolve())
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    for key in ("files", "lines", "imports", "imports_function_level", "import_statements_in_functions",
                "import_layers", "functions_over_40_lines", "card_lookups_package", "card_lookups_tests",
                "card_dict_lookups", "card_json_lookups", "card_dict_params", "llm_probes", "lm_eval_branches",
                "weight_type_branches"):
        print(f"{key:31s} {result[key]}")
    print(f"{'circles':31s} {len(result['circles'])}")
    for circle in result["circles"]:
        print(f"    {circle}")
    for key in ("kind_name_branches", "string_hooks"):
        print(f"{key:31s} {len(result[key])}")
        for where in result[key]:
            print(f"    {where}")
    print(f"{'imports that run back up':31s} {len(result['imports_back_up'])}")
    for edge in result["imports_back_up"]:
        print(f"    {edge}")
    print("lines per folder:", ", ".join(f"{k} {v}" for k, v in result["lines_per_folder"].items()))
    print("longest functions:")
    for line in result["longest_functions"]:
        print("   ", line)


if __name__ == "__main__":
    main()
