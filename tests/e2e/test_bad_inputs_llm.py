"""Bad inputs on the LLM surfaces (the hostile audit of issue 43): ``forgetless.apply`` on a model
object and streamed on a folder, ``evaluate`` and ``compress`` from Python, ``forgetless compress`` /
``evaluate`` with lm-eval task YAMLs. Each case is judged as ``test_bad_inputs.py`` judges its own:

* ``clear``: a refusal expected (a pattern): one ``ForgetlessError`` (Python) or exit code 2 with ONE
  error line (command line) naming the culprit, before any work (no stage line), the output absent
  or untouched;
* ``correct``: the right answer is to run (a check): it runs, and the check of what it gave holds
  (an fp16 folder stays fp16, a causal LM on a classification task is scored zero-shot, the card
  names the calibration texts used, a kill's leftovers are removed, a child's noise stays off the
  terminal);
* otherwise ``unclear`` (refused, but not so), ``traceback``, ``silent`` (ran where it should have
  refused, or ran wrong) — and ``destructive`` whenever a file of the fixture changed.

``python tests/e2e/test_bad_inputs.py`` prints the tally of these cases with the others.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import torch
import transformers

import forgetless
from forgetless.errors import ForgetlessError
from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.heads.config import HeadsConfig
from forgetless.methods.rtn.config import RtnConfig
from forgetless.methods.sparsegpt.config import SparseGptConfig
from forgetless.methods.wanda.config import WandaConfig
from forgetless.report.card_types import Card

from bad_llm_files import SMALL, TEXTS, build_llm_files


class Cli:
    """A command line's outcome: exit code, stderr and the output folder."""

    def __init__(self, code, err):
        self.code, self.err = code, err


def cli(*argv):
    def call(p, out):
        from test_bad_inputs import main_quietly

        return Cli(*main_quietly([a.format(**p, out=out) for a in argv]))
    return call


def lm_eval(name, *extra, method=("--method", "magnitude", "--recovery", "none")):
    """``forgetless compress`` of tiny-llama on the lm-eval task ``name`` of the fixture's YAMLs."""
    return cli("compress", "--model", "tiny-llama", "--base", "as-is", *method, "--task", "lm-eval", "--lm-eval-tasks",
               name, "--lm-eval-include", "{yamls}", "--no-progress", "--bench-repeats", "1", "--bench-seq-len", "16",
               "--out", "{out}", *extra)


def llama(p, dtype=torch.float32):
    from forgetless.models.tiny import tiny_llama_config

    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(tiny_llama_config(p["vocab"], tie_word_embeddings=True)).to(dtype).eval()


def poisoned(p, value):
    model = llama(p)
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight[0, 0] = value
    return model


def filled(value, p, out):
    """A ``{name}`` of the fixture in a text argument replaced by its path."""
    return value.format(**p, out=out) if isinstance(value, str) and "{" in value else value


def apply_object(methods, model=llama, **kwargs):
    def call(p, out):
        options = {"calibration": TEXTS, "tokenizer": p["tokenizer"], **kwargs}
        return forgetless.apply(model(p), methods, **{k: filled(v, p, out) for k, v in options.items()})
    return call


def streamed(folder, methods=None, **kwargs):
    def call(p, out):
        options = {k: filled(v, p, out) for k, v in {"calibration": TEXTS, "out_dir": out, **kwargs}.items()}
        return forgetless.apply_streamed(p.get(folder, filled(folder, p, out)), methods or WandaConfig(**SMALL), **options)
    return call


# ----- what a correct run gave ------------------------------------------------------------------------
def stored_dtypes(folder) -> set:
    from safetensors import safe_open

    with safe_open(str(Path(folder) / "model.safetensors"), framework="pt") as handle:
        return {handle.get_slice(name).get_dtype() for name in handle.keys()}


def keeps_fp16(result, p, out):
    assert stored_dtypes(result) == {"F16"}, stored_dtypes(result)
    assert (Path(result) / "model.safetensors").stat().st_size < 1.1 * (Path(p["llama16"]) / "model.safetensors").stat().st_size


def removes_leftovers(p, out):
    """What two kill -9s left beside ``out``: the dead writer's folder goes, a live one's and a user's stay."""
    from forgetless.fsutil import temporary_prefix

    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    out.parent.mkdir(parents=True, exist_ok=True)
    dead = out.parent / f"{temporary_prefix(out).replace(f'-{os.getpid()}-', f'-{gone.pid}-')}killed"
    live = out.parent / f"{temporary_prefix(out)}running"
    user = out.parent / f".{out.name}.tmp-mine"
    for folder in (dead, live, user):
        folder.mkdir()
        (folder / "model.safetensors.4-byte").write_bytes(b"\0" * 64)
    result = forgetless.apply_streamed(p["llama"], WandaConfig(**SMALL), calibration=TEXTS, out_dir=out)
    left = sorted(x.name for x in out.parent.iterdir() if x.name != out.name)
    assert left == sorted([live.name, user.name]), left
    return result


def zero_shot_scored(result, p, out):
    assert result.zero_shot is not None and result.sets["dev"]["n"] == 8, result


def exit_zero(result, p, out):
    assert result.code == 0, result.err[-500:]


def protocol_names(texts):
    def check(result, p, out):
        exit_zero(result, p, out)
        protocol = json.loads((out / "report.json").read_text())["task"]["protocol"]
        assert protocol.endswith(f"calibration texts: {texts.format(**p)}"), protocol
    return check


def children_quiet(p, out):
    """``quiet_children``: a child's stderr (git outside a repository) is dropped, Python's own kept."""
    script = ("import subprocess, sys\nfrom forgetless.cli import quiet_children\nwith quiet_children():\n"
              "    subprocess.run(['git', 'describe', '--always'], cwd='/')\n"
              "    subprocess.run([sys.executable, '-c', 'import sys; sys.stderr.write(\"child noise\")'])\n"
              "    print('forgetless line', file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(forgetless.__file__).parents[1])})
    assert done.returncode == 0 and done.stderr == "forgetless line\n", done.stderr
    return "quiet"


_RUN_CARDS: dict = {}  # the fixture folder → the report.json of a small LLM run on it (one run per test process)


def compress_card(p, out):
    """A small LLM run's card with users' names that are HTML (``<script>``) put in. The run is made once per
    process (the two escaping cases read the same card); its folder is copied to ``out``."""
    import shutil

    if p["root"] not in _RUN_CARDS:
        exit_zero(lm_eval("t_ok")(p, out), p, out)
        _RUN_CARDS[p["root"]] = out
    elif not out.exists():
        shutil.copytree(_RUN_CARDS[p["root"]], out)
    card = json.loads((out / "report.json").read_text())
    card["task"]["name"] = "<script>alert(1)</script>"
    return card


def markdown_escaped(p, out):
    from forgetless.report.markdown import render_markdown

    text = render_markdown(Card.from_json(compress_card(p, out)))
    assert "<script>" not in text, [line for line in text.splitlines() if "<script>" in line]
    return "escaped"


def model_card_escaped(p, out):
    from forgetless.report.model_card import model_card_summary, render_model_card

    card = compress_card(p, out)
    text = str(render_model_card(out / "model", model_card_summary(Card.from_json(card))))
    body = text.split("\n---\n", 1)[-1]  # the Markdown under the YAML metadata (data, not rendered as HTML)
    assert "<script>" not in body, [line for line in body.splitlines() if "<script>" in line]
    return "escaped"


def chance_worded(p, out):
    from forgetless.report.trust import near_chance

    message = near_chance("dev", 0.0, 4)
    assert "within" not in message and "0.250" in message, message  # 0.000 is not "within 0.05 of" 0.250
    return message


def cases() -> list[tuple]:
    """``(name, call(p, out), expected)``: a pattern (a refusal) or a check (a correct run)."""
    # ----- apply on a model object
    return [
        ("apply-seed-text", apply_object(WandaConfig(**SMALL), seed="x"), r"^seed='x': expected a whole number"),
        ("apply-seed-negative", apply_object(WandaConfig(**SMALL), seed=-1), r"^seed: -1 is out of range"),
        ("apply-seed-float", apply_object(WandaConfig(**SMALL), seed=1.5), r"^seed=1.5: expected a whole number"),
        ("apply-seed-bool", apply_object(WandaConfig(**SMALL), seed=True), r"^seed=True: expected"),
        ("apply-seed-huge", apply_object(WandaConfig(**SMALL), seed=2**40), r"^seed: 1099511627776 is out of range"),
        ("apply-method-typo", apply_object("wandaa"), r"unknown compression method 'wandaa'.*Did you mean 'wanda'\?"),
        ("apply-method-typo-recipe", apply_object("wanda-llm-2-44"), r"did you mean the recipe 'wanda-llm-2-4'\?"),
        ("apply-method-number", apply_object(5), r"expected a name or a config .*; got int"),
        ("apply-method-class", apply_object(WandaConfig), r"expected a name or a config .*; got type"),
        ("apply-method-dict", apply_object({"wanda": {}}), r"expected a name or a config .*; got dict"),
        ("apply-method-nested-list", apply_object([["wanda"]]), r"expected a name or a config .*; got list"),
        ("apply-gptq-then-wanda", apply_object([GptqConfig(group_size=16, **SMALL), WandaConfig(**SMALL)]),
         r"^methods=gptq,wanda: wanda comes after gptq, which leaves quantized weights .* put the quantizing method last"),
        ("apply-rtn-then-sparsegpt", apply_object([RtnConfig(group_size=16), SparseGptConfig(**SMALL)]),
         r"^methods=rtn,sparsegpt: sparsegpt comes after rtn"),
        ("apply-heads", apply_object("heads", calibration=None), r"^method 'heads' scores the model on a labelled task"),
        ("apply-heads-recovery-none", apply_object(HeadsConfig(recovery="none"), calibration=None),
         r"^method 'heads' scores the model on a labelled task; apply has none: use forgetless.compress"),
        ("apply-block-influence", apply_object(forgetless.METHODS.make_config("block-influence", {"remove": 1}), calibration=None), r"scores the model on a labelled"),
        ("apply-nash-on-llama", apply_object("nash", calibration=None), r"'nash' does not apply to a causal-lm model"),
        ("apply-folder", apply_object(WandaConfig(**SMALL), model=lambda p: p["llama"]),
         r"^model '.*llama': apply takes a model object; compress a decoder-only LM's folder layer by layer with "
         r"forgetless.apply_streamed"),
        ("streamed-model-object", lambda p, out: forgetless.apply_streamed(llama(p), WandaConfig(**SMALL),
                                                                          calibration=TEXTS, out_dir=out),
         r"^model: apply_streamed reads a folder or an offline LLM's name, got a LlamaForCausalLM; a model object"),
        ("apply-nan-object-sparsegpt", apply_object(SparseGptConfig(**SMALL), model=lambda p: poisoned(p, float("nan"))),
         r"^model: tensor model.layers.1.mlp.down_proj.weight holds NaN or infinite values"),
        ("apply-inf-object-gptq", apply_object(GptqConfig(group_size=16, **SMALL), model=lambda p: poisoned(p, float("inf"))),
         r"^model: tensor model.layers.1.mlp.down_proj.weight holds NaN or infinite"),
        ("apply-tokenizer-text", apply_object(WandaConfig(**SMALL), tokenizer="gpt2"), r"^tokenizer: expected a transformers"),
        ("apply-calibration-number", apply_object(WandaConfig(**SMALL), calibration=5), r"^calibration: expected a list"),
        ("apply-calibration-dict", apply_object(WandaConfig(**SMALL), calibration={"text": "a"}), r"got dict"),
        ("apply-calibration-missing-file", apply_object(WandaConfig(**SMALL), calibration="/no/such/texts.txt"),
         r"^calibration /no/such/texts.txt: not a text file"),
        ("apply-calibration-folder", apply_object(WandaConfig(**SMALL), calibration="{root}"), r"not a text file"),
        ("apply-calibration-blank", apply_object(WandaConfig(**SMALL), calibration=["  ", ""]), r"no text to calibrate"),
        ("apply-calibration-not-read", apply_object(RtnConfig(group_size=16)), r"^calibration: no method of rtn calibrates on text"),
        ("apply-overwrite-text", streamed("llama", overwrite="yes"), r"^overwrite='yes': expected"),
        ("apply-wanda-then-gptq", apply_object([WandaConfig(**SMALL), GptqConfig(group_size=16, **SMALL)]),
         lambda result, p, out: None),
        # ----- apply streamed from a folder
        ("streamed-device-tpu9", streamed("llama", device="tpu9"), r"^device=tpu9: not a device torch knows"),
        ("streamed-device-cuda", streamed("llama", device="cuda"), r"^device=cuda: .*(without CUDA|no cuda)"),
        ("streamed-device-cuda-1", streamed("llama", device="cuda:1"), r"^device=cuda:1: "),
        ("streamed-device-number", streamed("llama", device=0), r"^device=0: expected a device name"),
        ("streamed-device-meta", streamed("llama", device="meta"), r"^device=meta: no meta device"),
        ("streamed-seed-text", streamed("llama", seed="0"), r"^seed='0': expected a whole number"),
        ("streamed-out-is-input", streamed("llama", out_dir="{llama}"), r"^out_dir=.*llama: is an input .*\(model "),
        ("streamed-out-is-input-applied", streamed("applied", out_dir="{applied}"), r"^out_dir=.*applied: is an input"),
        ("streamed-out-parent-of-input", streamed("llama", out_dir="{root}"), r"contains an input of this command"),
        ("streamed-out-user-folder", streamed("llama", out_dir="{user_folder}"), r"holds 1 file\(s\) forgetless did not"),
        ("streamed-out-other-model", streamed("llama", out_dir="{llama16}"), r"holds a model \(config.json\)"),
        ("streamed-out-earlier-apply", streamed("llama", out_dir="{applied}"),
         r"holds the model of an earlier `forgetless.apply`; pass overwrite=True"),
        ("streamed-out-is-file", streamed("llama", out_dir="{a_file}"), r"a-file.txt: is an existing file"),
        ("streamed-out-in-file", streamed("llama", out_dir="{a_file}/model"), r"a-file.txt is a file, so nothing"),
        ("streamed-out-number", streamed("llama", out_dir=5), r"^out_dir=5: expected a path, got int"),
        ("streamed-out-empty", streamed("llama", out_dir=""), r"^out_dir='': name an output folder"),
        ("streamed-out-none", streamed("llama", out_dir=None), r"^out_dir: a model given as a folder"),
        ("streamed-out-is-calibration", streamed("llama", calibration="{texts}", out_dir="{texts}"),
         r"texts.txt: is an input of this command \(calibration"),
        ("streamed-config-2-layers", streamed("lie2"),
         r"lie2/model.safetensors: holds 4 layers under model.layers \(0-3\), but config.json gives 2"),
        ("streamed-config-6-layers", streamed("lie6"), r"lie6/model.safetensors: holds 4 layers .* gives 6"),
        ("streamed-config-hidden", streamed("liehid", SparseGptConfig(**SMALL)),
         r"liehid/model.safetensors: tensor .* is 30522×32, but config.json \(hidden_size 48"),
        ("streamed-config-ffn", streamed("lieffn"), r"lieffn/model.safetensors: tensor model.layers.0.mlp.\w+.weight is \d+×\d+, but config.json \(hidden_size 32, intermediate_size 96"),
        ("streamed-config-kv-heads", streamed("lieheads"), r"lieheads/model.safetensors: tensor .*k_proj.weight is 16×32"),
        ("streamed-config-dtype", streamed("liedtype"), r"liedtype/model.safetensors: holds F32 weights, but config.json"),
        ("streamed-all-nan", streamed("nan", SparseGptConfig(**SMALL)), r"nan/model.safetensors: tensor .* holds NaN"),
        ("streamed-one-inf-gptq", streamed("inf", GptqConfig(group_size=16, **SMALL)),
         r"inf/model.safetensors: tensor model.layers.2.mlp.down_proj.weight holds NaN or infinite values \(1 of"),
        ("streamed-truncated", streamed("truncated"), r"truncated/model.safetensors: truncated or corrupt"),
        ("streamed-missing-folder", streamed("/no/such/model"), r"model folder '/no/such/model' does not exist"),
        ("streamed-folder-is-file", streamed("{a_file}"), r"a-file.txt: is a file; a model is a folder"),
        ("streamed-encoder-folder", streamed("bert"), r"bert: a BertLMHeadModel; streamed calibration compresses decoder-only causal LMs"),
        ("streamed-forgetless-config-lies", streamed("applied_lie"),
         r"applied-lie/(forgetless.json: its shape does not fit|model.safetensors: holds 4 layers)"),
        ("streamed-out-in-cache", lambda p, out: streamed("llama", out_dir=os.environ["FORGETLESS_CACHE"] + "/m")(p, out),
         r"is inside the forgetless cache"),
        ("streamed-calibration-dataset-no-text", streamed("llama", calibration=datasets.Dataset.from_dict({"q": ["a"]})),
         r"^calibration: the dataset has none of the text columns"),
        ("evaluate-tokenizer-for-folder", lambda p, out: forgetless.evaluate(p["llama"], files_task(p),
                                                                             tokenizer=p["tokenizer"]),
         r"^tokenizer: a saved model is evaluated with the tokenizer saved beside it"),
        ("streamed-quantized-then-pruned", streamed("llama", ["gptq", "sparsegpt"]),
         r"^methods=gptq,sparsegpt: sparsegpt comes after gptq, .* put the quantizing method last"),
        ("streamed-magnitude", streamed("llama", "magnitude"), r"does not calibrate layer by layer"),
        ("streamed-no-calibration", streamed("llama", calibration=None), r"^calibration: wanda calibrates on text"),
        ("streamed-tokenizer-text", streamed("llama", tokenizer="gpt2"), r"^tokenizer: expected a transformers"),
        ("streamed-overwrite-number", streamed("llama", overwrite=1), r"^overwrite=1: expected True or False"),
        ("streamed-fp16-stays-fp16", streamed("llama16", SparseGptConfig(**SMALL)), keeps_fp16),
        ("streamed-forgetless-fp16-stays-fp16", streamed("forgetless16", SparseGptConfig(**SMALL)), keeps_fp16),
        ("streamed-rerun-removes-killed-leftovers", removes_leftovers, lambda result, p, out: None),
        # ----- evaluate and compress from Python
        ("evaluate-seed-text", lambda p, out: forgetless.evaluate(p["llama"], "synthetic", seed="x"), r"^seed='x'"),
        ("evaluate-batch-size-zero", lambda p, out: forgetless.evaluate(p["llama"], "synthetic", batch_size=0),
         r"^batch_size: 0 is out of range"),
        ("evaluate-max-length-text", lambda p, out: forgetless.evaluate(p["llama"], "synthetic", max_length="long"),
         r"^max_length='long': expected a whole number in 8..8192"),
        ("evaluate-model-kind-typo", lambda p, out: forgetless.evaluate(p["llama"], "synthetic", model_kind="llm"),
         r"^model_kind=llm: not one of auto, classifier, seq2seq, causal-lm"),
        ("evaluate-causal-folder-generation", lambda p, out: forgetless.evaluate(p["llama"], "synthetic-lookup"),
         r"^MODEL_PATH .*llama: a causal language model; forgetless scores one on classification and lm-eval tasks, "
         r"not on the generation task 'synthetic-lookup'"),
        ("evaluate-causal-object-generation", lambda p, out: forgetless.evaluate(llama(p), "synthetic-lookup",
                                                                                 tokenizer=p["tokenizer"]),
         r"^model: the given LlamaForCausalLM: a causal language model; .* not on the generation task"),
        ("evaluate-causal-folder-zero-shot", lambda p, out: forgetless.evaluate(p["llama"], files_task(p)),
         zero_shot_scored),
        ("evaluate-causal-object-zero-shot",
         lambda p, out: forgetless.evaluate(llama(p), files_task(p), tokenizer=p["tokenizer"]), zero_shot_scored),
        ("compress-seed-text", lambda p, out: forgetless.compress("tiny-llama", "synthetic", "wanda", seed="1"),
         r"^seed='1': expected a whole number"),
        ("compress-out-dir-number", lambda p, out: forgetless.compress(
            "tiny-llama", files_task(p), "wanda", model_kind="causal-lm", base="as-is", out_dir=3),
         r"^out_dir=3: expected a path"),
        # ----- lm-eval task YAMLs, through the command line
        ("yaml-no-output-type", lm_eval("t_noout"),
         r"t_noout .*output_type generate_until \(lm-eval's default: the YAML names none\) with doc_to_choice"),
        ("yaml-loglikelihood-default-metrics", lm_eval("t_lldefault"), r"metric perplexity is not one forgetless reads"),
        ("yaml-loglikelihood-perplexity", lm_eval("t_llppl"), r"t_llppl .*metric perplexity is not one .*\(acc\)"),
        ("yaml-rolling-acc", lm_eval("t_rollacc"), r"metric acc is not one forgetless reads of a loglikelihood_rolling"),
        ("yaml-unknown-metric", lm_eval("t_foo"), r"t_foo \(.*foo.yaml\): metric foo is not one forgetless reads"),
        ("yaml-metric-mcc", lm_eval("t_mcc"), r"metric mcc is not one forgetless reads"),
        ("yaml-metric-f1", lm_eval("t_f1"), r"metric f1 is not one"),
        ("yaml-metric-mutual-info", lm_eval("t_mutual"), r"metric acc_mutual_info is not one"),
        ("yaml-metric-brier", lm_eval("t_brier"), r"metric brier_score is not one"),
        ("yaml-metric-function", lm_eval("t_fnmetric"), r"metric !function utils.score is not one"),
        ("yaml-metric-acc-norm-only", lm_eval("t_normonly"), r"metric_list lacks acc, the per-item value"),
        ("yaml-item-without-choices", lm_eval("t_nochoice"), r"t_nochoice \(.*\), item 3: has 0 choice\(s\)"),
        ("yaml-item-one-choice", lm_eval("t_onechoice"), r"t_onechoice .*item 2: has 1 choice\(s\)"),
        ("yaml-choices-text", lm_eval("t_textchoice"), r"t_textchoice \(.*text-choices.yaml\): cannot load its YAML or data"),
        ("yaml-gold-out-of-range", lm_eval("t_goldout"), r"t_goldout .*item 2: gold answer 5 is not one of the 2"),
        ("yaml-gold-not-a-choice", lm_eval("t_goldtext"), r"t_goldtext .*item 0: gold answer"),
        ("yaml-task-defined-twice", lm_eval("t_dup"), r"lm-eval task t_dup: defined twice, in .*dup1.yaml and .*dup2"),
        ("yaml-shadows-a-shipped-task", lm_eval("piqa_offline", "--lm-eval-include", "{shadow_yamls}"),
         r"piqa_offline: defined twice, in .*piqa_offline.yaml and .*shadow-yamls/piqa.yaml"),
        ("yaml-include-missing", lm_eval("t_incmissing"),
         r"t_incmissing: .*include-missing.yaml: its include: file gone.yaml is missing"),
        ("yaml-include-cycle", lm_eval("t_cycle"), r"t_cycle: .*cycle-a.yaml: its include: files form a cycle"),
        ("yaml-not-yaml", lm_eval("t_bad", "--lm-eval-include", "{broken_yamls}"), r"bad.yaml is not valid YAML"),
        ("yaml-group", lm_eval("g_two"), r"lm-eval name 'g_two' is a group or tag"),
        ("yaml-twice-in-the-list", lm_eval("t_ok,t_ok"), r"--lm-eval-tasks t_ok,t_ok: a task is named twice"),
        ("yaml-no-task-names", lm_eval(","), r"name its lm-eval tasks"),
        ("yaml-include-is-a-file", lm_eval("t_ok", "--lm-eval-include", "{a_file}"), r"a-file.txt: not a folder of lm-eval"),
        ("evaluate-encoder-on-lm-eval", cli("evaluate", "{bert}", "--task", "lm-eval", "--lm-eval-tasks", "t_ok",
                                            "--lm-eval-include", "{yamls}"),
         r"--task lm-eval: model .*bert' is a bert model, not a decoder-only language model"),
        ("cli-compress-nan-folder", lm_eval("t_ok", "--model", "{nan}", "--model-kind", "causal-lm"),
         r"nan/model.safetensors: tensor model.embed_tokens.weight holds NaN or infinite values"),
        ("cli-compress-config-lies", lm_eval("t_ok", "--model", "{lie2}"), r"lie2/model.safetensors: holds 4 layers"),
        ("cli-evaluate-config-lies", cli("evaluate", "{liehid}", "--task", "lm-eval", "--lm-eval-tasks", "t_ok",
                                         "--lm-eval-include", "{yamls}"), r"liehid/model.safetensors: tensor .* is 30522×32"),
        ("cli-evaluate-nan-folder", cli("evaluate", "{inf}", "--task", "lm-eval", "--lm-eval-tasks", "t_ok",
                                        "--lm-eval-include", "{yamls}"),
         r"inf: tensor model.layers.2.mlp.down_proj.weight holds NaN or infinite values"),
        # ----- calibration of an LLM task
        ("calibration-two-sources", lm_eval("t_ok", "--train", "{texts}", "--calibration-data", "{texts}",
                                            method=("--method", "wanda")),
         r"--calibration-data .*texts.txt and --train .*texts.txt: both name the calibration texts"),
        ("calibration-needed-none-given", lm_eval("t_ok", method=("--method", "sparsegpt")),
         r"task lm-eval: one-shot methods calibrate on its training split.*--calibration-data"),
        ("calibration-train-missing", lm_eval("t_ok", "--train", "/no/such/texts.txt"), r"--train /no/such/texts.txt: not a file"),
        ("calibration-data-not-read", lm_eval("t_ok", "--calibration-data", "{texts}"),
         r"--calibration-data: no method of this run calibrates on text \(magnitude\)"),
        ("lm-eval-base-fine-tune", cli("compress", "--model", "tiny-llama", "--method", "magnitude", "--recovery", "none",
                                       "--task", "lm-eval", "--lm-eval-tasks", "t_ok", "--lm-eval-include", "{yamls}",
                                       "--out", "{out}"), r"pass --base as-is"),
        ("lm-eval-model-kind-classifier", lm_eval("t_ok", "--model-kind", "classifier"), r"--model-kind classifier"),
        ("lm-eval-magnitude-needs-no-calibration", lm_eval("t_ok"), protocol_names("none (no method of the run reads them)")),
        ("lm-eval-card-names-calibration-data", lm_eval("t_ok", "--calibration-data", "{texts}",
                                                        "--calibration-examples", "4", method=("--method", "wanda")),
         protocol_names("{texts}")),
        ("evaluate-lm-eval-needs-no-calibration", cli("evaluate", "{llama}", "--task", "lm-eval", "--lm-eval-tasks",
                                                      "t_three", "--lm-eval-include", "{yamls}"), exit_zero),
        ("cli-evaluate-causal-folder-zero-shot", cli("evaluate", "{llama}", "--task", "files", "--dev", "{tsv}",
                                                     "--text-a", "sentence", "--text-b", "", "--labels", "neg,pos"),
         exit_zero),
        ("child-process-noise-off-the-terminal", children_quiet, lambda result, p, out: None),
        # ----- the report's Markdown and the chance warning (issue 42: report/*)
        ("markdown-escapes-names", markdown_escaped, lambda result, p, out: None),
        ("model-card-escapes-names", model_card_escaped, lambda result, p, out: None),
        ("chance-warning-worded", chance_worded, lambda result, p, out: None),
    ]


def files_task(p):
    from forgetless.data.tasks import load_task

    return load_task("files", train=p["tsv"], dev=p["tsv"], text_a="sentence", text_b="", labels=["neg", "pos"])


# ----- judging one case ----------------------------------------------------------------------------------
def state(root: Path) -> dict:
    """Size and modification time of every file under ``root`` (any write changes one)."""
    return {str(f): (f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(root.rglob("*")) if f.is_file()}


def judge(name: str, call, expected, p: dict, out: Path) -> tuple[str, str]:
    """``(outcome, detail)`` of one case (module docstring)."""
    root = Path(p["root"])
    before, existed = state(root), out.exists()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            result = call(p, out)
    except AssertionError as exc:  # a check inside a case that runs (a correct case ran wrong)
        outcome, detail = ("silent" if callable(expected) else "traceback"), f"ran wrong: {exc}"
    except ForgetlessError as exc:
        message = str(exc)
        ok = isinstance(expected, str) and "\n" not in message and re.search(expected, message) and \
            out.exists() == existed
        outcome, detail = ("clear" if ok else "unclear"), message
    except Exception as exc:  # noqa: BLE001 - a traceback is what the harness counts
        outcome, detail = "traceback", f"{type(exc).__name__}: {exc}"
    else:
        outcome, detail = _ran(result, expected, p, out, existed)
    if state(root) != before:
        outcome = "destructive"
    return outcome, detail


def _ran(result, expected, p, out, existed) -> tuple[str, str]:
    if isinstance(result, Cli) and isinstance(expected, str):
        lines = [line for line in result.err.splitlines() if "error:" in line]
        ok = result.code == 2 and len(lines) == 1 and re.search(expected, lines[0]) and "[forgetless]" not in result.err \
            and out.exists() == existed
        return ("clear" if ok else "silent" if result.code == 0 else "unclear"), result.err.strip()[-300:]
    if isinstance(expected, str):
        return "silent", f"ran: {str(result)[:100]}"
    try:
        expected(result, p, out)
    except AssertionError as exc:
        return "silent", f"ran wrong: {exc}"
    return "correct", ""


def llm_paths(root: Path) -> dict:
    from forgetless.models.loading import resolve_model_path

    tokenizer = transformers.AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    return {**build_llm_files(root, tokenizer), "tokenizer": tokenizer, "vocab": tokenizer.vocab_size}


def tally(root: Path, cases_of=None, paths_of=None) -> dict:
    """Every case of ``cases_of()`` (this module's ``cases`` by default; the other LLM-surface modules pass
    theirs, with the fixture builder they use): ``{outcome: count}``, printing the cases that are not clear /
    correct."""
    os.environ["FORGETLESS_CACHE"] = str(root / "cache")
    os.environ.pop("FORGETLESS_DATA_DIR", None)
    p = (paths_of or llm_paths)(root / "in")
    counts = dict(tried=0, clear=0, correct=0, traceback=0, silent=0, unclear=0, destructive=0)
    for i, (name, call, expected) in enumerate((cases_of or cases)()):
        outcome, detail = judge(name, call, expected, p, root / f"out-{i}" / "out")
        counts["tried"] += 1
        counts[outcome] += 1
        if outcome not in ("clear", "correct"):
            print(f"{outcome.upper()} {name}: {detail}")
    return counts


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()
TALLY: dict[str, str] = {}


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return llm_files


def run_case(case, paths, tmp_path, monkeypatch, record_property) -> str:
    """One case of an LLM-surface module (this one, ``_schemes``, ``_sensitivity``, ``_moe``, ``_report``), judged
    in its own cache and recorded for the tally conftest prints: clear where a refusal is expected, else correct."""
    name, call, expected = case
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FORGETLESS_DATA_DIR", raising=False)
    outcome, detail = judge(name, call, expected, paths, tmp_path / "run" / "out")
    record_property("bad_input", f"llm {outcome}")
    assert outcome == ("clear" if isinstance(expected, str) else "correct"), detail
    return outcome


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_llm_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    TALLY[case[0]] = run_case(case, paths, tmp_path, monkeypatch, record_property)


def test_llm_tally_of_the_cases_run():
    """The LLM-surface cases this session ran: every one clear or correct."""
    counts = {kind: sum(1 for result in TALLY.values() if result == kind)
              for kind in ("clear", "correct", "traceback", "silent", "unclear", "destructive")}
    print(f"\nLLM-surface bad inputs: tried {len(TALLY)}, " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    assert counts["clear"] + counts["correct"] == len(TALLY), \
        {name: result for name, result in TALLY.items() if result not in ("clear", "correct")}
    assert len(CASES) >= 60
