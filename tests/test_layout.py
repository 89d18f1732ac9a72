"""The redesign's structural rules, checked on the source (issue 19): no code outside a method's
own folder decides by a method's or objective's name (the pipeline, validation, the command line,
kinds, metrics, the report and sweeps read what a config declares), and the configs are the schema
(every option of the tree has help; flags, flat recipe keys and dotted paths are unique)."""
import ast
from pathlib import Path

from forgetless import tree
from forgetless.config import ProfileConfig, RunConfig, SweepConfig
from forgetless.registry import METHODS, OBJECTIVES

PACKAGE = Path(__file__).resolve().parents[1] / "forgetless"
GENERIC = ["pipeline.py", "validate.py", "api.py", "config.py", "tree.py", "cli", "kinds", "metrics", "report",
           "sweep", "recipes"]


def _files():
    for entry in GENERIC:
        path = PACKAGE / entry
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")))


def test_no_generic_module_branches_on_a_method_or_objective_name():
    names = set(METHODS.names()) | set(OBJECTIVES.names())
    found = []
    for path in _files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            for side in [node.left, *node.comparators]:
                items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno} compares with {item.value!r}" for item in items
                          if isinstance(item, ast.Constant) and item.value in names]
    assert found == []


def test_every_option_of_the_tree_has_help_and_one_flag_key_and_path():
    for cls in (RunConfig, SweepConfig, ProfileConfig):
        leaves = tree.table(cls)
        assert all(leaf.field.metadata.get("help") for leaf in leaves), [l.dotted for l in leaves
                                                                          if not leaf_help(l)]
        cli = [leaf for leaf in leaves if leaf.cli]
        assert len({leaf.flag for leaf in cli}) == len(cli)
        assert len({leaf.dotted for leaf in leaves}) == len(leaves)


def leaf_help(leaf) -> str:
    return leaf.field.metadata.get("help", "")
