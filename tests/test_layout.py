"""The redesign's structural rules, checked on the source (issues 19, 33): no module outside
``methods/`` and ``objectives/`` names a method or an objective (the pipeline, validation, the command
line, kinds, metrics, the report and sweeps read what a config declares: no comparison with a name,
no ``OBJECTIVES.make_config("rmc")``, no table of names), and the configs are the schema (every option
of the tree has help; flags, flat recipe keys and dotted paths are unique)."""
import ast
from pathlib import Path

from forgetless import tree
from forgetless.config import ProfileConfig, RunConfig, SweepConfig
from forgetless.registry import METHODS, OBJECTIVES

PACKAGE = Path(__file__).resolve().parents[1] / "forgetless"
OWN_FOLDERS = ("methods", "objectives")  # where a method or objective lives and may say its own name
SCHEMA = "config.py"  # the defaults of the config tree are values a user could type: `--method truncate`
PRESETS = "schemes.py"  # the scheme presets' module-level tables: what `--scheme W4A16` types for the user


def _files():
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in OWN_FOLDERS]



def _named(path: Path, names: set, root: Path = PACKAGE) -> list[str]:
    """Every string constant of ``path`` that is a registered name, except docstrings, dict keys and
    subscripts (data keys such as a shape's ``"heads"``), in the schema the default values of its
    classes' fields, and the scheme presets' tables (``schemes.py``: llm-compressor's presets spelled as options)."""
    tree_ = ast.parse(path.read_text(encoding="utf-8"))
    skip = set()
    for node in ast.walk(tree_):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skip.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.Dict):
            skip |= {id(key) for key in node.keys if key is not None}
        if isinstance(node, ast.Subscript):
            skip |= {id(n) for n in ast.walk(node.slice)}
        if isinstance(node, ast.Module) and path == root / PRESETS:
            for statement in node.body:
                if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                    skip |= {id(n) for n in ast.walk(statement.value)}
        if isinstance(node, ast.ClassDef) and path == PACKAGE / SCHEMA:
            for statement in node.body:
                if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                    skip |= {id(n) for n in ast.walk(statement.value)}
    return sorted(f"{path.relative_to(root)}:{node.lineno} names {node.value!r}" for node in ast.walk(tree_)
                  if isinstance(node, ast.Constant) and node.value in names and id(node) not in skip)


def test_no_module_outside_methods_and_objectives_names_one():
    names = set(METHODS.names()) | set(OBJECTIVES.names())
    assert [found for path in _files() for found in _named(path, names)] == []


def test_the_name_guard_catches_calls_comparisons_and_tables(tmp_path):
    (tmp_path / "runner.py").write_text(
        '"""Docstrings may say rmc."""\n'
        'ALL = ("ce", "rmc")\n'
        'def f(config, shape):\n'
        '    """rmc"""\n'
        '    if config.name == "magnitude":\n'
        '        return OBJECTIVES.make_config("rmc", {})\n'
        '    return shape["heads"], {"heads": 1}\n')
    assert _named(tmp_path / "runner.py", {"ce", "rmc", "magnitude", "heads"}, tmp_path) == [
        "runner.py:2 names 'ce'", "runner.py:2 names 'rmc'", "runner.py:5 names 'magnitude'",
        "runner.py:6 names 'rmc'"]


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
