"""Recipe files: validation (unknown keys, wrong types → errors naming key and file), every paper
scale validated without running, every cpu scale run on tiny models with a handful of examples,
a re-run from the saved ``model/recipe.yaml`` giving the same report-card numbers, and a
``model/recipe.yaml`` saved before the config tree existed (flat keys) giving the same card and
weights as when it was written."""
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from forgetless.cli import main, run_recipe
from forgetless.recipes import load_recipe
from forgetless.errors import ConfigError
from forgetless.recipes.catalog import builtin_folder, find_recipe, recipe_names
from forgetless.tree import to_recipe

from llm_data import write_llm_data

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted(builtin_folder().glob("*.yaml"))
LLM_TASKS = ("llm-zero-shot", "lm-eval")
REAL_DATA = ("sst2", "rte", "qnli", "qqp", "mnli-small", "fever", "tweetqa", "samsum", "xsum")
DATA = Path("/work/shared/data") if Path("/work/shared/data").is_dir() else ROOT.parent / "shared" / "data"
TINY = {"train_size": 12, "eval_size": 6, "epochs": 1, "batch_size": 4, "max_length": 32, "no_progress": True,
        "eval_batch_size": 8}
BENCH = {"bench_batch_size": 2, "bench_seq_len": 8, "bench_repeats": 1, "bench_new_tokens": 2}


def test_recipes_exist_for_the_papers():
    names = {p.stem for p in RECIPES}
    for prefix in ("rmc-table1-4", "rmc-table2-5", "rmc-table3-6", "rmc-table7-9", "rmc-table8-10", "rmc-figure1",
                   "rmc-figure3", "rahp-table1", "rahp-figures2-5", "nash-table3", "nash-table4", "nash-figure3",
                   "nash-figure5", "nash-table11"):
        assert any(n.startswith(prefix) for n in names), prefix


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_paper_scale_validates(path):
    resolved, result = run_recipe(path, "paper", check=True)
    assert result is None and resolved["scale"] == "paper" and resolved["needs"]
    assert resolved["model"] not in ("minilm", "tiny-t5", "tiny-bert")  # the paper's own model
    cpu, _ = run_recipe(path, "cpu", check=True)
    assert cpu["changes"] and cpu["scale"] == "cpu"


def test_unknown_key_and_wrong_type_name_key_and_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: magnitude\nsparsty: 0.4\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: unknown key 'sparsty'.*did you mean 'sparsity'"):
        load_recipe(bad)
    bad.write_text("method: magnitude\nepochs: many\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: key 'epochs': expected a number"):
        load_recipe(bad)
    bad.write_text("method: truncate\nsparsity: 0.4\n")
    with pytest.raises(ConfigError, match=r"key 'sparsity' does not apply to method truncate \(it belongs to"):
        load_recipe(bad)
    bad.write_text("freeze_embeddings: 1\n")
    with pytest.raises(ConfigError, match=r"'freeze_embeddings': expected true or false"):
        load_recipe(bad)
    bad.write_text("scales:\n  cpu: {epochs: 1}\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: no scale 'paper'"):
        load_recipe(bad, "paper")
    bad.write_text("objective: focal\nobjective_gamma: -1\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: gamma: -1\.0 is out of range; valid: >= 0"):
        run_recipe(bad, check=True)
    bad.write_text("train: {learning_rate: 2}\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: learning_rate: 2\.0 is out of range; valid: > 0 and <= 1"):
        load_recipe(bad)


def test_cli_reports_recipe_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: fast\n")
    assert main(["run", str(bad), "--check"]) == 2
    assert "bad.yaml: key 'lr'" in capsys.readouterr().err


def _overrides(path: Path, out: Path) -> list:
    recipe = load_recipe(path, "cpu")
    config = recipe["config"]
    sets = dict(TINY)
    if recipe["command"] == "profile":
        return [("model", "tiny-t5"), ("seq_lengths", [8, 16]), ("head_fractions", [1.0, 0.5]),
                ("ffn_fractions", [1.0]), ("batch_size", 2), ("max_new_tokens", 2), ("source_length", 8),
                ("repeats", 1), ("out", str(out))]
    if config.task.name in LLM_TASKS:  # a tiny random Llama on a small data folder in the offline layout
        calibrates = {"calibration_examples": 4, "calibration_length": 16, "calibration_batch": 2} \
            if hasattr(config.method, "calibration_examples") else {}
        sets = {"model": "tiny-llama", "data_dir": str(write_llm_data(out.parent / "llm-data")), "eval_size": 2,
                "no_progress": True, **calibrates,
                "then": [{**item, "calibration_examples": 4, "calibration_length": 16, "group_size": 16}
                         for item in to_recipe(config)["then"]]}
        if config.method.name in ("gptq", "awq") and config.method.weight_type == "int":
            sets["group_size"] = 16  # tiny-llama's layers are 32 and 64 wide
        return list({**sets, **BENCH}.items()) + [("out", str(out))]
    seq2seq = config.method.name in ("nash", "cofi")
    sets["model"] = "tiny-t5" if seq2seq else "tiny-bert"
    if config.task.name in REAL_DATA:  # recipes name no data folder: the test gives the offline one
        sets["data_dir"] = str(DATA)
    if recipe["command"] == "sweep":
        given = config.objective_options  # an objective option in the recipe keeps its objective
        needed = [o for o in config.objectives if any(k in given for k in _fields(o))]
        sets.update(seeds=[0], levels=config.levels[:1], objectives=needed or config.objectives[:1])
        if config.level_option == "layers":
            sets["levels"] = [1]  # tiny-bert has 2 layers
    if seq2seq:
        sets.update(finetune_epochs=1.0, max_new_tokens=4)
    if config.method.name in ("heads", "rahp"):
        sets.update(scoring_examples=6)
    if config.method.name == "rahp" and recipe["command"] == "compress":
        sets.update(clever_examples=2, clever_batches=3, clever_samples=2)
    return list({**sets, **BENCH}.items()) + [("out", str(out))]


def _fields(objective: str) -> set:
    import dataclasses

    from forgetless.registry import OBJECTIVES

    return {f.name for f in dataclasses.fields(OBJECTIVES.config_class(objective))}


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_cpu_scale_runs_on_tiny_models(path, tmp_path):
    recipe = load_recipe(path, "cpu")
    if recipe["command"] != "profile" and recipe["config"].task.name in REAL_DATA and not DATA.is_dir():
        pytest.skip("offline data folder not present")
    resolved, result = run_recipe(path, "cpu", _overrides(path, tmp_path / "out"))
    out = tmp_path / "out"
    saved = out / "model" / "recipe.yaml" if resolved["command"] == "compress" else out / "recipe.yaml"
    assert load_recipe(saved)["name"] == resolved["name"]
    if resolved["command"] == "sweep":
        assert result["complete"] and result["rows"] and result["recipe"]["scale"] == "cpu"
    elif resolved["command"] == "compress":
        tiny = "tiny-llama" if recipe["config"].task.name in LLM_TASKS else "tiny-bert"
        assert result["recipe"]["model"] == tiny and result["recipe"]["name"] == resolved["name"]
    else:
        assert (out / "profile.json").is_file()


def test_rerun_from_saved_recipe_gives_the_same_card(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: rerun\nmodel: tiny-bert\ntask: synthetic\nhard_fraction: 0.3\nmethod: magnitude\n"
                      "sparsity: 0.5\nobjective: focal\nobjective_gamma: 1.0\nseed: 3\n")
    sets = list({**TINY, "train_size": 24, "eval_size": 12, **BENCH}.items())
    _, first = run_recipe(recipe, sets=sets, out=str(tmp_path / "a"))
    saved = tmp_path / "a" / "model" / "recipe.yaml"
    saved_config = load_recipe(saved)["config"]
    assert saved_config.objective.gamma == 1.0 and saved_config.method.prune_every == 10
    _, again = run_recipe(saved, out=str(tmp_path / "b"))
    for key in ("sets", "challenge", "bias", "hard_easy", "headline"):
        assert json.dumps(first[key], sort_keys=True) == json.dumps(again[key], sort_keys=True), key
    assert first["params"]["compressed"]["nonzero"] == again["params"]["compressed"]["nonzero"]
    assert first["calibration"] == again["calibration"] and first["calibration"]["sets"]["dev"]["base"]["ece"] >= 0
    assert {k: v for k, v in first["recipe"].items() if k != "out"} == \
           {k: v for k, v in again["recipe"].items() if k != "out"}
    weights = [load_file(next((tmp_path / d / "model").glob("*.safetensors"))) for d in ("a", "b")]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_compress_command_saves_a_runnable_recipe(tmp_path):
    out = tmp_path / "c"
    assert main(["compress", "--model", "tiny-bert", "--method", "truncate", "--layers", "1", "--train-size", "12",
                 "--eval-size", "6", "--epochs", "1", "--batch-size", "4", "--max-length", "32", "--bench-repeats", "1",
                 "--bench-batch-size", "2", "--bench-seq-len", "8", "--no-progress", "--out", str(out)]) == 0
    saved = load_recipe(out / "model" / "recipe.yaml")
    config = saved["config"]
    assert config.method.name == "truncate" and config.method.layers == 1 and config.method.selection == "first"
    assert config.objective.name == "ce" and config.task.train_size == 12 and saved["out"] == str(out)
    resolved, _ = run_recipe(out / "model" / "recipe.yaml", check=True)
    assert resolved["method"] == {"name": "truncate", "layers": 1, "selection": "first", "recovery": "fine-tune"}
    assert resolved["train"]["batch_size"] == 4 and resolved["out"] == str(out)


def test_each_sweep_run_saves_a_recipe_that_reruns_it(tmp_path):
    """A run of a 3-seed-style sweep (training seed 1, the sweep's data seed 0) reruns from its own
    recipe, in place of the documented command (no --out), to the same data, card and weights."""
    recipe = tmp_path / "s.yaml"
    recipe.write_text("name: sweep-rerun\ncommand: sweep\nmodel: tiny-bert\ntask: synthetic\nhard_fraction: 0.3\n"
                      "method: magnitude\nobjectives: [ce, focal]\nobjective_gamma: 1.0\nlevel_option: sparsity\n"
                      "levels: [0.5]\nseeds: [1]\n")
    sets = list({**TINY, "train_size": 24, "eval_size": 12, **BENCH}.items())
    run_recipe(recipe, sets=sets, out=str(tmp_path / "s"))
    run_dir = tmp_path / "s" / "runs" / "focal-s0.5-seed1"
    loaded = load_recipe(run_dir / "model" / "recipe.yaml")
    config = loaded["config"]
    assert loaded["command"] == "compress" and config.objective.name == "focal" and config.objective.gamma == 1.0
    assert config.method.sparsity == 0.5 and config.seed == 1 and config.task.data_seed == 0
    assert not hasattr(config, "objectives") and config.teacher_epochs is None
    ce = load_recipe(tmp_path / "s" / "runs" / "ce-s0.5-seed1" / "model" / "recipe.yaml")["config"]
    assert ce.objective.name == "ce" and not hasattr(ce.objective, "gamma")
    first = json.loads((run_dir / "report.json").read_text())
    _, again = run_recipe(run_dir / "model" / "recipe.yaml")  # its saved out: <sweep>/reruns/<run>
    assert Path(again["recipe"]["out"]) == tmp_path / "s" / "reruns" / "focal-s0.5-seed1"
    for key in ("task", "sets", "challenge", "bias", "hard_easy", "headline"):
        assert json.dumps(first[key], sort_keys=True) == json.dumps(again[key], sort_keys=True), key
    weights = [load_file(next((d / "model").glob("*.safetensors"))) for d in (run_dir, Path(again["recipe"]["out"]))]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_builtin_recipes_by_name_from_any_folder(tmp_path, monkeypatch, capsys):
    """Recipes are package data: a name works from any folder, ``forgetless recipes`` lists each with
    its paper table, ``run --data-dir`` sets the data folder, and recipes name no data folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORGETLESS_DATA_DIR", raising=False)
    assert len(recipe_names()) == len(RECIPES) >= 14 and find_recipe("rahp-table1") == builtin_folder() / "rahp-table1.yaml"
    assert all("data_dir" not in p.read_text() for p in RECIPES)
    resolved, _ = run_recipe("rahp-table1", check=True)
    assert resolved["name"] == "rahp-table1" and resolved["task"]["name"] == "sst2" and "data_dir" not in resolved["task"]
    resolved, _ = run_recipe("rahp-table1.yaml", "paper", check=True, data_dir=str(tmp_path))
    assert resolved["task"]["data_dir"] == str(tmp_path.resolve()) and resolved["model"] == "bert-base-uncased"
    monkeypatch.setenv("FORGETLESS_DATA_DIR", str(tmp_path))  # the folder actually read is saved
    assert run_recipe("rahp-table1", check=True)[0]["task"]["data_dir"] == str(tmp_path.resolve())
    with pytest.raises(ConfigError, match=r"recipe rahp-tabel1 is neither a file nor a built-in recipe \(did you "
                                          r"mean 'rahp-table1'\?\).*rmc-table7-9-objectives"):
        run_recipe("rahp-tabel1", check=True)
    with pytest.raises(ConfigError, match="data_dir: does not apply to a profile recipe"):
        run_recipe("nash-figure3-profile", check=True, data_dir=str(tmp_path))
    assert main(["recipes"]) == 0
    out = capsys.readouterr().out
    assert "rahp-table1 " in out and "RAHP Table 1: GLUE / AdvGLUE" in out and f"{len(RECIPES)} recipes" in out
    assert main(["run", "rmc-table1-4-magnitude", "--scale", "paper", "--check"]) == 0
    assert "task:\n  name: mnli\n" in capsys.readouterr().out  # paper scale: GLUE MNLI train → HANS from the hub


def test_a_recipe_saved_before_the_config_tree_gives_the_same_card(tmp_path):
    """``tests/fixtures/legacy/recipe.yaml`` is a ``model/recipe.yaml`` written by the flat-key code
    (before ``forgetless.config``); ``expected.json`` holds that run's card numbers and a checksum
    of its weights. Rerun now: the same numbers, the same weights (training on CPU is deterministic)."""
    fixture = ROOT / "tests" / "fixtures" / "legacy"
    expected = json.loads((fixture / "expected.json").read_text())
    _, card = run_recipe(fixture / "recipe.yaml", out=str(tmp_path / "legacy"))
    for name, roles in expected["sets"].items():
        assert {role: card["sets"][name][role]["accuracy"] for role in roles} == roles, name
    assert {role: card["params"][role]["total"] for role in expected["params"]} == expected["params"]
    weights = load_file(tmp_path / "legacy" / "model" / "model.safetensors")
    assert len(weights) == expected["tensors"]
    assert abs(sum(float(t.double().abs().sum()) for t in weights.values()) - expected["weights_abs_sum"]) < 1e-6
    assert card["recipe"]["method"]["name"] == "heads" and card["recipe"]["objective"]["lam"] == 0.9


def test_a_recipe_with_the_old_symmetric_key_names_the_new_one(tmp_path):
    """gptq / rtn grids are symmetric by default; the switch is ``asymmetric`` (issue 31)."""
    from forgetless import tree
    from forgetless.config import RunConfig

    for values, key in (({"method": {"name": "gptq", "symmetric": True}}, "method.symmetric"),
                        ({"method": "rtn", "symmetric": True}, "symmetric")):
        with pytest.raises(ConfigError, match=f"unknown key '{key}' \\(did you mean '{key.replace('sym', 'asym')}'\\?\\)"):
            tree.build(RunConfig, values, "r.yaml")
    assert tree.build(RunConfig, {"method": "gptq"}, "r.yaml").method.asymmetric is False
    assert tree.build(RunConfig, {"method": "gptq", "asymmetric": True}, "r.yaml").method.asymmetric is True
