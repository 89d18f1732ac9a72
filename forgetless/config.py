"""The configuration tree of a run: the one schema of forgetless (standard library only).

``RunConfig`` holds the task (``TaskConfig``), the method (a registered ``MethodConfig``, e.g.
``HeadsConfig(ratio=0.5)``), methods stacked after it (``then``), the objective (an
``ObjectiveConfig``), training (``TrainConfig``), evaluation (``EvalConfig``), the speed benchmark
(``SpeedConfig``) and CLEVER (``CleverConfig``). The command line is generated from it
(``cli/parser.py``), a recipe is it as YAML (``recipes/``; ``--set train.learning_rate=1e-4``), and
Python builds it directly. Every range is checked when a config is built (``options.Config``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import OptionError
from .offline_models import OFFLINE_MODELS
from .schemes import SCHEME_HELP, SCHEMES
from .options import Config, option
from .ranges import MAX_TOKENS
from .registry import METHODS, OBJECTIVES

MODEL_KINDS = ("classifier", "seq2seq", "causal-lm")
# what works on any decoder-only language model of transformers (models/blocks.py, decoder_only.py)
ANY_DECODER = ("any decoder-only causal LM of transformers (…ForCausalLM: Gemma 3, Phi-3, Mixtral, Qwen3-MoE, GPT-OSS, "
               "…): wanda, sparsegpt, gptq, rtn (targets / ignore, mixture-of-experts per expert), magnitude (dense "
               "models), block-influence and truncate (layer removal), streamed apply, the LLM evaluation")
# the model types with an adapter of their own (models/adapters.py registers one per family; a test checks both
# agree): encoders and encoder-decoders, and the decoder families with head / FFN-unit pruning
MODEL_TYPES = ("bart", "bert", "distilbert", "electra", "encoder-decoder", "gpt2", "llama", "mbart", "mistral", "mt5",
               "qwen2", "qwen3", "roberta", "t5", "xlm-roberta")
# the models a run can name (``--model``; tests check these agree with models/loading.py and models/tiny.py)
MODELS = {"minilm": "bundled MiniLM-L6 (sentence-transformers/all-MiniLM-L6-v2, BERT, 6 layers x 12 heads)",
          **{name: model.description for name, model in OFFLINE_MODELS.items()},
          "tiny-bert": "random 2-layer BERT (quick runs)", "tiny-llama": "random 4-layer Llama (quick runs)",
          "tiny-t5": "random 4+4-layer T5 (quick runs)", "tiny-bart": "random 4+4-layer BART (quick runs)",
          "tiny-bert2bert": "random 4+4-layer BERT encoder-decoder (quick runs)"}
SEED = {"low": 0, "high": 2**32 - 1}


# ----- what a method and an objective declare ---------------------------------------------------------
@dataclass
class MethodConfig(Config):
    """Base of a compression method's config. Class attributes declare what the pipeline needs to
    know without importing the method: the task types and model kinds it applies to, whether it
    needs an encoder-decoder, its default objective, whether it removes weights (``structured``),
    whether the run needs CLEVER estimates, what data it reads before any training
    (``calibration``: ``none``; ``text``, calibration texts: the task's training inputs, or
    ``--calibration-data`` / ``forgetless.apply(calibration=)``; ``task``, the labelled training
    split), and a small ``smoke`` config for the contract and determinism tests."""

    name: ClassVar[str] = ""
    task_types: ClassVar[tuple[str, ...]] = ("classification",)
    model_kinds: ClassVar[tuple[str, ...]] = MODEL_KINDS
    seq2seq_only: ClassVar[bool] = False
    default_objective: ClassVar[str] = "ce"
    structured: ClassVar[bool] = True
    needs_clever: ClassVar[bool] = False
    calibration: ClassVar[str] = "none"
    quantizes: ClassVar[bool] = False  # leaves quantized weights, which no further method can compress
    smoke: ClassVar[dict] = {}

    def check_model(self, dims: dict, where: str) -> None:
        """Options against the model's shape (``dims``: layers, decoder_layers, heads, max_positions;
        a value may be None); raise ``OptionError`` naming the flag and the valid range."""

    def shape_after(self, dims: dict) -> dict:
        """``dims`` of the model this method returns (the next ``--then`` method is checked against it)."""
        return dims

    @property
    def recovers(self) -> bool:
        """Whether the method trains after (or while) compressing (``recovery`` option, if any; a post-training
        method without one declares ``recovers: ClassVar[bool] = False``)."""
        return getattr(self, "recovery", "fine-tune") != "none"


def recovery_option(help: str = "fine-tune: train after (or while) compressing; none: post-training, nothing "
                                  "is trained"):
    """The ``recovery`` field of a method that can run post-training (one field object per class)."""
    return option("fine-tune", choices=("fine-tune", "none"), help=help)


@dataclass
class ObjectiveConfig(Config):
    """Base of a training objective's config; its options are flags ``--objective-<field>``."""

    name: ClassVar[str] = ""
    flag_prefix: ClassVar[str] = "objective-"
    model_kinds: ClassVar[tuple[str, ...]] = ("classifier",)
    uses_difficulty: ClassVar[bool] = False  # RMC's variance-based sample difficulty: a sweep reports its agreement


# ----- the run ------------------------------------------------------------------------------------
@dataclass
class TaskConfig(Config):
    """Which data: a registered task by name and its options (``forgetless list`` names the tasks)."""

    group: ClassVar[str] = "task"
    name: str = option("synthetic", flag="task", help=(
        "classification: synthetic (built-in), mnli-small, mnli (→ HANS), sst2, rte, qnli, qqp (→ AdvGLUE / PAWS), "
        "fever (→ FEVER-Symmetric) from --data-dir or the hub, files (local files), hub (a Hugging Face dataset "
        "id); generation: synthetic-lookup (built-in), tweetqa, samsum, xsum (need --data-dir); LLM suites through "
        "lm-evaluation-harness (pip install forgetless[llm]): llm-zero-shot (ARC-Easy, ARC-Challenge, HellaSwag, "
        "PIQA, WinoGrande, OpenBookQA, WikiText-2; needs --data-dir), llm-generation (IFEval, GSM8K, SAMSum, TweetQA, "
        "passkey retrieval; needs --data-dir), lm-eval (--lm-eval-tasks)"))
    data_dir: str | None = option(None, help="folder with the real evaluation data (e.g. ../shared/data); default: "
                                             "$FORGETLESS_DATA_DIR, else the named benchmarks load from the hub")
    train_size: int | None = option(None, low=1, help="cap the training set (seeded, stratified sample of exactly N)")
    eval_size: int | None = option(None, low=1, help="cap each evaluation set (seeded, stratified sample of exactly N; "
                                                     "LLM tasks: N items of each lm-eval task)")
    data_seed: int | None = option(None, **SEED, help="seed of the data splits and caps only (default: --seed); the "
                                                      "runs of a sweep share one")
    hard_fraction: float | None = option(None, low=0, high=1, help="synthetic: share of shortcut-breaking "
                                                                   "training examples")
    eval_sets: list[str] | None = option(None, help="generation tasks: extra evaluation sets, comma-separated "
                                                    "(samsum, xsum)")
    train_file: str | None = option(None, flag="train", help="files: training file (.tsv/.csv/.json/.jsonl); LLM tasks: "
                                                             "calibration texts (text lines or .jsonl; default: the "
                                                             "data folder's XSum sample)")
    dev_file: str | None = option(None, flag="dev", help="files: dev file")
    challenge: list[str] = option(factory=list, help="files: a challenge set NAME=PATH (repeatable); hub: NAME=SPLIT")
    text_a: str | None = option(None, help="files/hub: column of the first text")
    text_b: str | None = option(None, help="files/hub: column of the second text ('' for single sentences)")
    label_column: str | None = option(None, help="files/hub: label column")
    labels: list[str] | None = option(None, help="files/hub: label names in id order, comma-separated")
    hard_column: str | None = option(None, help="files: column with ground-truth hard flags (1/true = hard)")
    dataset: str | None = option(None, help="hub: dataset id; fever: a hub id for the paper-scale FEVER training set")
    subset: str | None = option(None, help="hub / fever: dataset configuration (e.g. mnli of nyu-mll/glue)")
    train_split: str | None = option(None, help="hub / fever: training split (default train)")
    dev_split: str | None = option(None, help="hub: dev split (default validation)")
    json_key: str | None = option(None, help="files: in JSON files, the key holding the list of records "
                                             "(or FILE.json:KEY)")
    lm_eval_tasks: list[str] | None = option(None, help="lm-eval: lm-evaluation-harness task names, comma-separated "
                                                        "(lm-eval's own, the shipped *_offline ones, or those of "
                                                        "--lm-eval-include)")
    lm_eval_include: str | None = option(None, help="lm-eval: a folder of your own lm-eval task YAMLs")
    perplexity_window: int | None = option(None, low=2, high=MAX_TOKENS, help=(
        "LLM tasks: tokens per window of the WikiText-2 perplexity and of lm-eval's requests (non-overlapping "
        "windows; default: the model's context, capped at 2048)"))
    perplexity_windows: int | None = option(None, low=0, help=(
        "LLM tasks: score WikiText-2 perplexity on at most N seeded windows, apart from --eval-size (default 40: "
        "81,920 tokens of SmolLM2's 148 windows of 2048; all when N is at least their number; 0: none)"))
    exact_lm_eval: bool = option(False, switch=True, help=(
        "LLM tasks: lm-eval's own scoring (its HFLM runs every choice in full) instead of forgetless's shared-context "
        "scoring (each item's context once, its KV cache per choice; log-likelihoods within 5e-5 nats per token of lm-eval's)"))
    divergence_prompts: int = option(0, low=0, high=1_000_000, help=(
        "LLM tasks: the base answers N prompts greedily (cached) and the compressed model is scored teacher-forced "
        "on its answers: KL per answer token, top-1 agreement, identical answers, first divergence (default prompts: "
        "the data folder's IFEval prompts, a seeded sample; 0: off)"))
    divergence_file: str | None = option(None, help=(
        "LLM tasks: the prompts of --divergence-prompts (.jsonl with a prompt / text / question field, or text "
        "lines; default: DATA_DIR/llm/ifeval/input_data.jsonl)"))
    divergence_max_new_tokens: int | None = option(None, low=1, high=MAX_TOKENS, help=(
        "LLM tasks: tokens the base answers each --divergence-prompts prompt with at most (it stops at its end "
        "token; default 64)"))
    until_interval: float | None = option(None, low=0, low_open=True, high=200, help=(
        "LLM tasks: score items in a seeded random order and stop once the headline change's anytime-valid 95% "
        "interval (a confidence sequence) is narrower than W accuracy points"))


@dataclass
class TrainConfig(Config):
    """Training hyper-parameters of the compressed model (and of the teacher, with ``teacher_epochs``).
    ``max_length`` caps input tokens (the source, for generation); ``max_target_length`` caps
    generation targets."""

    group: ClassVar[str] = "training"
    epochs: float = option(3.0, low=0, high=1e6, help="training epochs of the compressed model (nash/cofi: the "
                                                      "pruning phase; --finetune-epochs follows)")
    learning_rate: float = option(5e-5, flag="lr", low=0, high=1, low_open=True, help="learning rate")
    batch_size: int = option(32, low=1, high=1_000_000, help="training batch size per device")
    max_length: int = option(128, low=8, high=MAX_TOKENS, help="max input tokens per example")
    max_target_length: int = option(32, low=2, high=MAX_TOKENS, help="generation: max target tokens in training")
    weight_decay: float = option(0.01, low=0, high=1, help="AdamW weight decay")
    warmup_ratio: float = option(0.0, low=0, high=1, help="share of steps with a linear learning-rate warm-up")
    seed: int = option(0, **SEED, cli=False, help="training seed (the run's --seed)")
    save_steps: int = option(200, low=1, help="checkpoint every N steps (resume point)")
    checkpoint_minutes: float = option(10.0, low=0, high=1e6, help="also checkpoint every N minutes of training; "
                                                                   "a checkpoint closes every epoch (0: no timed ones)")
    logging_steps: int = option(50, low=1, help="log the training loss every N steps")
    max_steps: int = option(-1, low=-1, help="stop after N optimisation steps (-1: run --epochs)")
    freeze_embeddings: bool = option(False, help="do not train token embeddings / output projection (saves time "
                                                 "on CPU)")
    gradient_accumulation_steps: int = option(1, low=1, high=10_000, help="one optimiser step every N batches "
                                                                         "(effective batch: batch size × N × processes)")
    bf16: bool = option(False, switch=True, help="train in bfloat16 mixed precision (CPU or a recent GPU)")
    fp16: bool = option(False, switch=True, help="train in float16 mixed precision (a CUDA GPU only)")
    device: str = option("auto", choices=("auto", "cpu", "cuda"),
                         help="run on (training, calibration, scoring, generation, speed): auto (a CUDA GPU when "
                              "there is one, else the CPU), cpu, or cuda")
    progress: bool = option(True, cli=False, help="progress bars (the run's --no-progress)")
    report_to: str = option("none", help="Trainer integrations for training logs: none, tensorboard, wandb, … "
                                         "(comma-separated)")

    NOT_IN_IDENTITY: ClassVar[tuple[str, ...]] = ("progress", "report_to", "save_steps", "checkpoint_minutes",
                                                  "logging_steps")

    def identity(self) -> dict:
        """The settings that decide the trained weights (what a checkpoint or cached teacher is
        reused for): all but progress bars, log integrations and checkpoint / log cadence."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in self.NOT_IN_IDENTITY}

    def check(self) -> None:
        if self.max_steps == 0:
            raise OptionError("--max-steps 0: give -1 (run --epochs) or at least 1 step")
        if self.bf16 and self.fp16:
            raise OptionError("--bf16 and --fp16: give one mixed precision, not both")
        if self.fp16 and self.device == "cpu":
            raise OptionError("--fp16 --device cpu: float16 training needs a CUDA GPU; use --bf16 on CPU")
        if self.max_steps < 0 and self.epochs <= 0:
            raise OptionError(f"--epochs: {self.epochs} is out of range; valid: > 0")


GENERATING, LM = ("seq2seq",), ("causal-lm",)  # model kinds of the evaluation options that apply to some


@dataclass
class EvalConfig(Config):
    """Evaluation: batch size, decoding for generating models, the runtime of the compressed model,
    and zero-shot scoring of a causal LM (``metrics/zero_shot.py``)."""

    group: ClassVar[str] = "evaluation"
    batch_size: int = option(64, flag="eval-batch-size", low=1, high=1_000_000, help="evaluation batch size")
    max_new_tokens: int = option(32, kinds=GENERATING, low=1, high=MAX_TOKENS,
                                 help="generation: tokens generated per example")
    num_beams: int = option(1, kinds=GENERATING, low=1, high=64, help="generation: beam size (1 = greedy)")
    meteor: bool = option(True, cli=False, help="METEOR on generation tasks (needs nltk's WordNet offline)")
    runtime: str = option("torch", choices=("torch", "torch-bf16", "onnxruntime"), help=(
        "the compressed model is evaluated and timed under this runtime (the base always in fp32 PyTorch); "
        "onnxruntime and torch-bf16: classifiers only"))
    perplexity_file: str | None = option(None, kinds=LM, help=(
        "causal-lm: held-out perplexity of both models on this text file (one text per line, or .jsonl; default "
        "with --data-dir: its XSum sample)"))
    perplexity_texts: int = option(40, kinds=LM, low=1, help="causal-lm: the first N texts of that file")
    prompt_template: str = option("auto", kinds=LM, choices=("auto", "chat", "plain"), help=(
        "causal-lm: auto (the chat template when the tokenizer has one) | chat | plain"))
    shots: int = option(0, kinds=LM, low=0, high=64, help="causal-lm: k-shot prompts from the training split (seeded)")
    label_score: str = option("sum", kinds=LM, choices=("sum", "mean"),
                              help="causal-lm: sum | mean (length-normalised) label-word log-probability")
    score_calibration: str = option("content-free", kinds=LM, choices=("none", "content-free", "set-mean"), help=(
        "causal-lm: none | content-free | set-mean (contextual calibration, Zhao et al. 2021)"))
    shot_seed: int = option(0, **SEED, cli=False, help="seed of the k-shot examples (the run's --seed)")


@dataclass
class SpeedConfig(Config):
    """The speed benchmark: base vs compressed, interleaved repeats, median and spread reported."""

    group: ClassVar[str] = "speed benchmark"
    mode: str = option("auto", flag="speed", choices=("auto", "full", "none"), help=(
        "auto: time only a model whose dense computation changed (layers, heads or widths removed, int8 / bf16 "
        "kernels, another --runtime), and say why the rest is not timed; full: always time; none: never"))
    batch_size: int = option(32, flag="bench-batch-size", low=1, high=1_000_000, help="throughput batch size")
    seq_len: int = option(128, flag="bench-seq-len", low=2, high=MAX_TOKENS, help="input length of the timed batches")
    warmup: int = option(2, low=0, cli=False, help="untimed calls before timing")
    repeats: int = option(5, flag="bench-repeats", low=1, high=10_000, help="interleaved repeats (median reported)")
    latency_batch: int = option(1, low=1, cli=False, help="batch size of the single-request latency figure")
    new_tokens: int = option(16, flag="bench-new-tokens", low=1, high=MAX_TOKENS,
                             help="generation: tokens decoded per timed call")
    num_beams: int = option(1, low=1, high=64, cli=False, help="generation: beam size of the timed calls")


@dataclass
class CleverConfig(Config):
    """CLEVER estimates (Weng et al. 2018) of both models on a fixed, seeded dev subset."""

    group: ClassVar[str] = "robustness"
    enabled: bool = option(False, flag="clever", switch=True, help="add CLEVER estimates of both models (always "
                                                                   "on for methods that need them, e.g. rahp)")
    examples: int = option(64, flag="clever-examples", low=1, help="size of the CLEVER evaluation subset")
    batches: int = option(20, flag="clever-batches", low=3, help="batch maxima for the reverse-Weibull fit")
    samples: int = option(16, flag="clever-samples", low=1, help="points sampled per batch")
    radius: float = option(2.0, flag="clever-radius", low=0, low_open=True, help="ℓ2 ball radius in embedding units")
    norm: str = option("2", flag="clever-norm", choices=("2", "inf"), help="perturbation norm")
    max_length: int = option(64, low=8, high=MAX_TOKENS, cli=False, help="max tokens (min(64, --max-length))")
    seed: int = option(0, **SEED, cli=False, help="seed of the subset (the run's --seed)")


BASES = ("fine-tune", "as-is")


@dataclass
class RunConfig(Config):
    """Everything that defines one compression run (recorded in the report card and as the
    resolved recipe). ``method`` / ``then`` / ``objective`` take a registered name or config."""

    group: ClassVar[str] = "compression"
    model: Any = option("minilm", help=f"model to start from: 'minilm' (bundled), {' / '.join(OFFLINE_MODELS)} "
                                       "(LLMs converted from GGUF), tiny-bert / tiny-t5 / tiny-bart / tiny-llama "
                                       "(random, quick runs), a local folder, or a hub id; in Python also a "
                                       "PreTrainedModel")
    method: Any = option("truncate", help="compression method (forgetless list)")
    then: list = option(factory=list, help="a method applied after --method, with its own options "
                                           "METHOD[:OPTION=VALUE,...] (repeatable, in order), e.g. --method heads "
                                           "--then quantize:dtype=int8")
    objective: Any = option(None, help="training objective (default: the method's: ce; nash-distil for nash and "
                                       "cofi)")
    teacher: str | None = option(None, help="a saved fine-tuned model to use as teacher / base instead of "
                                            "fine-tuning (read only)")
    teacher_epochs: float | None = option(None, low=0, low_open=True, high=1e6,
                                          help="epochs for the teacher (default: --epochs)")
    base: str = option("fine-tune", choices=BASES, help=(
        "fine-tune: the base (teacher) is --model fine-tuned on the task; as-is: --model as it is, no training, "
        "nothing written (post-training compression of a pretrained LLM)"))
    student_init: str = option("teacher", choices=("teacher", "pretrained"), help=(
        "start the compressed model from the fine-tuned teacher or from the pretrained model"))
    model_kind: str = option("auto", choices=("auto",) + MODEL_KINDS, help=(
        "how the model is used: auto (classifier; seq2seq for generation tasks and nash/cofi; causal-lm for "
        f"{' and '.join(OFFLINE_MODELS)}), or causal-lm: a decoder-only LM scored zero-shot by label-word likelihood"))
    seed: int = option(0, **SEED, help="seed for data splits, model construction, masks and training")
    progress: bool = option(True, negate="no-progress", help="progress bars (--no-progress hides them)")
    keep_work: bool = option(False, switch=True, help="keep training checkpoints in OUT/work (default: deleted "
                                                      "after a successful run)")
    cache_dir: str | None = option(None, cli=False, help="shared cache of objectives (default: OUT/work/cache)")
    calibration_data: str | None = option(None, help=(
        "calibration texts of the methods that calibrate on text (forgetless list): a text file (one text per "
        "line, or .jsonl records with a document / text / context field) or a set of the data folder by name "
        "(xsum, wikitext2, samsum); default: the task's training inputs"))
    scheme: str | None = option(None, choices=tuple(SCHEMES), help=SCHEME_HELP)
    task: TaskConfig = option(factory=TaskConfig, help="the data")
    train: TrainConfig = option(factory=TrainConfig, help="training")
    eval: EvalConfig = option(factory=EvalConfig, help="evaluation")
    speed: SpeedConfig = option(factory=SpeedConfig, help="speed benchmark")
    clever: CleverConfig = option(factory=CleverConfig, help="robustness estimates")

    def check(self) -> None:
        self.method = METHODS.config(self.method)
        self.then = [METHODS.config(item) for item in self.then]
        self.objective = OBJECTIVES.config(self.objective or self.method.default_objective)
        replace = dataclasses.replace  # copies: a nested config may be shared by several runs (a sweep)
        self.train = replace(self.train, seed=self.seed, progress=self.progress)  # one seed for the run
        self.eval = replace(self.eval, shot_seed=self.seed)
        self.clever = replace(self.clever, seed=self.seed, max_length=min(64, self.train.max_length))
        for flag, value in (("--model", self.model), ("--teacher", self.teacher)):
            if isinstance(value, str) and not value.strip():
                raise OptionError(f"{flag} '': name a model (a built-in name, a folder or a hub id)"
                                  + ("; without --teacher, one is fine-tuned" if flag == "--teacher" else ""))
        if self.base == "as-is" and self.teacher:
            raise OptionError("--base as-is: the base is the model as it is (--model); a teacher (--teacher) names "
                              "another base: give one of them")
        if self.model_kind == "auto" and self.model in OFFLINE_MODELS:  # a pretrained LLM: scored by label likelihood
            self.model_kind = "causal-lm"

    @property
    def teacher_train(self) -> TrainConfig:
        """The teacher's training: ``train`` with ``teacher_epochs``."""
        if self.teacher_epochs is None:
            return self.train
        return dataclasses.replace(self.train, epochs=self.teacher_epochs)

    @property
    def robustness(self) -> bool:
        return self.clever.enabled or self.method.needs_clever


@dataclass
class SweepConfig(RunConfig):
    """A sweep: one configuration over objectives × levels of a method option × seeds (Du et al.
    Table 7, Figures 1 and 3). Objective options apply to every listed objective that has them."""

    group: ClassVar[str] = "sweep"
    method: Any = option("magnitude", help="compression method (forgetless list)")
    student_init: str = option("pretrained", choices=("teacher", "pretrained"), help=(
        "start each compressed model from the fine-tuned teacher or the pretrained model"))
    objectives: list[str] = option(factory=lambda: ["ce", "distil", "smooth", "focal", "jtt", "rmc"],
                                   help="objective names, comma-separated")
    objective_options: dict = option(factory=dict, cli=False, help="objective options by field name")
    seeds: list[int] = option(factory=lambda: [0], help="seeds, comma-separated (the paper uses 3)")
    levels: list[str] = option(factory=lambda: ["0.4"], help="values of --level-option, comma-separated")
    level_option: str = option("sparsity", help="method option the levels set (sparsity, layers, decoder_layers …)")
    teacher_seed: int | None = option(None, **SEED, help="seed of one teacher shared by every seed of the sweep "
                                                         "(default: one teacher per seed)")

    def check(self) -> None:
        super().check()
        for name in ("objectives", "seeds", "levels"):
            values = getattr(self, name)
            if not values:
                raise OptionError(f"--{name}: an empty list; give at least one value")
            keys = [_same_value(v) for v in values]
            twice = sorted({str(v) for v, key in zip(values, keys) if keys.count(key) > 1})
            if twice:  # one run counted twice would look like replication (n = 2, spread 0)
                raise OptionError(f"--{name} {','.join(map(str, values))}: a value is given twice "
                                  f"({', '.join(twice)}); give each value once")


def _same_value(value):
    """A list item as compared for duplicates: ``0.2`` and ``"0.20"`` are one level."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


@dataclass
class ProfileConfig(Config):
    """The encoder-decoder speed profile (NASH Figure 3): time per layer vs sequence length for several
    head / FFN widths, and the encoder vs decoder share of generation time."""

    group: ClassVar[str] = "profile"
    model: str = option("minilm", help="encoder-decoder to profile (minilm = bert2bert warm start)")
    compressed: str | None = option(None, help="a compressed model folder to profile too")
    seq_lengths: list[int] = option(factory=lambda: [16, 32, 64, 128, 256], low=1, high=MAX_TOKENS,
                                    help="input lengths, comma-separated")
    head_fractions: list[float] = option(factory=lambda: [1.0, 0.5, 0.25], low=0, low_open=True, high=1,
                                         help="shares of heads kept, comma-separated")
    ffn_fractions: list[float] = option(factory=lambda: [1.0, 0.5, 0.25], low=0, low_open=True, high=1,
                                        help="shares of FFN units kept, comma-separated")
    batch_size: int = option(8, low=1, high=1_000_000, help="batch size")
    num_beams: int = option(1, low=1, high=64, help="beam size of the timed generation")
    max_new_tokens: int = option(16, low=1, high=MAX_TOKENS, help="tokens decoded per timed generation")
    source_length: int = option(64, low=1, high=MAX_TOKENS, help="source tokens of the timed generation")
    repeats: int = option(3, low=1, high=10_000, help="repeats (median reported)")
    seed: int = option(0, **SEED, help="seed of model construction")
