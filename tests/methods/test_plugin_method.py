"""A new method from one file, outside the package (issue 19): ``fixtures/plugin/drop_last_plugin.py``
(a config dataclass and its implementation) named in ``$FORGETLESS_PLUGINS`` appears in
``forgetless list``, as command-line flags, as recipe keys, in ``--then``, and runs through the
contract test (every architecture it claims, saved model reloaded in a fresh process) and the
determinism test — with no other file touched. A method folder in the package that is not one (no
``__init__.py``, no ``config.py``, a ``config.py`` that fails to import) is an error naming it."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from forgetless.errors import ConfigError
from forgetless.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "tests" / "fixtures" / "plugin"


def _env(plugin: bool = True) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "FORGETLESS_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(PLUGIN_DIR), str(ROOT), env.get("PYTHONPATH", "")])
    env["HF_HUB_OFFLINE"] = "1"
    if plugin:
        env["FORGETLESS_PLUGINS"] = "drop_last_plugin"
    return env


def _cli(*argv, plugin: bool = True):
    return subprocess.run([sys.executable, "-m", "forgetless", *argv], env=_env(plugin), capture_output=True,
                          text=True, cwd=ROOT)


def test_plugin_method_is_listed_has_flags_recipe_keys_and_then_items(tmp_path):
    listed = _cli("list")
    assert listed.returncode == 0 and re.search(r"^  drop-last +classifier/seq2seq/causal-lm; "
                                                r"classification/generation; none$", listed.stdout, re.MULTILINE)
    assert "drop-last" not in _cli("list", plugin=False).stdout
    helped = " ".join(_cli("compress", "--help").stdout.split())
    assert "--drop DROP layers removed from the top of the first stack (default 1 (drop-last))" in helped
    recipe = tmp_path / "r.yaml"
    recipe.write_text("model: tiny-bert\nmethod: drop-last\ndrop: 1\nthen: ['drop-last:drop=1']\n")
    checked = _cli("run", str(recipe), "--check")
    assert checked.returncode == 0, checked.stderr
    assert "method:\n  name: drop-last\n  drop: 1\n" in checked.stdout and "then:\n- name: drop-last\n" in checked.stdout
    bad = _cli("compress", "--method", "drop-last", "--drop", "0", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "--drop: 0 is out of range; valid: >= 1" in bad.stderr
    deep = _cli("compress", "--model", "tiny-bert", "--method", "drop-last", "--drop", "2", "--out", str(tmp_path / "y"))
    assert deep.returncode == 2 and "--drop 2: model 'tiny-bert' has 2 layers; valid 1..1" in deep.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_plugin_method_runs_through_the_contract_test():
    contract = "tests/e2e/test_contract.py::"
    cases = [f"{contract}test_method_on_architecture[drop-last-{arch}]"
             for arch in ("bert", "tiny-t5", "tiny-llama (causal-lm)")]
    cases += [contract + name for name in ("test_every_method_declares_a_valid_smoke_config",
                                           "test_configs_import_no_torch_and_document_every_option")]
    cases.append("tests/e2e/test_determinism.py::test_same_seed_same_weights[drop-last]")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *cases], env=_env(),
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:]
    ran = [line for line in result.stdout.splitlines() if " passed" in line]
    assert ran and ran[-1].split()[0] == "6", result.stdout[-1500:]  # each case also reloads its model elsewhere


@pytest.mark.parametrize("files, message", [
    ({"config.py": "X = 1\n"}, "has no __init__.py; every compression method folder is a package"),
    ({"__init__.py": ""}, "has no config.py"),
    ({"__init__.py": "", "config.py": "import no_such_module\n"},
     "config.py cannot be imported: ModuleNotFoundError: No module named 'no_such_module'"),
    ({"__init__.py": "", "config.py": "1 +\n"}, "config.py cannot be imported: SyntaxError"),
])
def test_a_broken_method_folder_is_one_error_naming_it(files, message, tmp_path, monkeypatch):
    name = f"methods_{tmp_path.name}"  # a package of its own per case (sys.modules keeps imported ones)
    package = tmp_path / name
    (package / "_shared").mkdir(parents=True)  # shared code, not a method: skipped
    (package / "__init__.py").write_text("")
    (package / "shrink").mkdir()
    for file, text in files.items():
        (package / "shrink" / file).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=f"compression method folder {name}/shrink.*{re.escape(message)}"):
        Registry("compression method", name).names()
