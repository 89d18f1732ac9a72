"""The report card as types: one frozen dataclass per section, ``Card`` holding them. Its JSON Schema
(``forgetless schema``; shipped as ``report/report.schema.json``) is generated from these classes
(``report/json_types.py``), and every ``report.json`` is checked against them before it is written.

Fractions in [0, 1] for accuracies, ROUGE / METEOR in %, counts >= 0, every number finite (``json_types``:
``Fraction``, ``Percent``, ``Count``, ``NonNegative``; the schema states the same bounds). Sections whose inner
shape is the task's or the method's own (a set's metrics, a method's config and section, the LLM suite's
per-task numbers) are typed as JSON objects, a set's common metrics (``n``, accuracies, ROUGE) key by key;
what every reader relies on is typed field by field. ``Card.__post_init__`` holds what a
type cannot say: which sections each task kind has, and that an interval contains its value.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal

from ..config import LM
from ..data.task_kinds import task_kind
from .json_types import OMIT, Count, Fraction, Keys, NonNegative, Percent, from_json, json_schema, to_json

SCHEMA = "forgetless-report-2"
SCHEMA_ID = "urn:forgetless:schema:forgetless-report-2"
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")  # Card.json_schema(), shipped (a test keeps them equal)
JSON = dict[str, Any]
PART = Annotated[JSON, Keys((("accuracy", Fraction | None), ("n", Count)))]  # a set's hard / easy part
SET_METRICS = Annotated[JSON, Keys((
    ("n", Count), ("accuracy", Fraction | None), ("acc", Fraction | None), ("acc_norm", Fraction | None),
    ("rouge1", Percent | None), ("rouge2", Percent | None), ("rougeL", Percent | None), ("meteor", Percent | None),
    ("predicted_share", dict[str, Fraction | None]), ("per_label", dict[str, Fraction | None]),
    ("hard", PART | None), ("easy", PART | None)))]  # one model's metrics on one set


def _optional():
    return field(default=None, metadata=OMIT)


class Document:
    """A whole JSON document of these types (a card, an evaluation): to and from plain JSON values."""

    def to_json(self) -> dict:
        """Plain JSON values (a card: what ``report.json`` holds)."""
        return to_json(self)

    @classmethod
    def from_json(cls, data: dict):
        """The document from plain JSON values; ``json_types.CardTypeError`` naming the first misfit."""
        return from_json(cls, data)


@dataclass(frozen=True)
class Kind:
    """What was compared: the task's kind (``lm-eval``: an LLM suite) and the model's kind."""
    task: Literal["classification", "generation", "lm-eval"]
    model: Literal["classifier", "seq2seq", "causal-lm"]


@dataclass(frozen=True)
class TaskInfo:
    """The task: its name, evaluation protocol, headline metric, pooled challenge sets, set sizes."""
    name: str
    protocol: str
    metric: str
    pooled_challenges: list[str]
    sizes: dict[str, Count]


@dataclass(frozen=True)
class MethodInfo:
    """The method and its config, the objective it trained with, the methods applied after it
    (``then``), each method's own card section (``sections``) and the one-shot layer summary (``layers``)."""
    name: str
    config: JSON
    structured: bool
    quantizes: bool
    objective: str
    objective_options: JSON
    student_init: str
    train: JSON
    then: list[JSON]
    sections: JSON
    layers: list[JSON]
    grid_rule: str | None = _optional()

    def chain(self) -> list[ChainStep]:
        """This method and its ``then`` methods, in the order they ran."""
        return [ChainStep(self.name, self.config, self.structured, self.quantizes),
                *(ChainStep.of(entry) for entry in self.then)]


@dataclass(frozen=True)
class ChainStep:
    """One method of a card's chain: its name and config, whether it removes weights (``structured``) and
    whether it leaves quantized weights (``quantizes``)."""
    name: str
    config: JSON
    structured: bool
    quantizes: bool

    @classmethod
    def of(cls, entry: JSON) -> ChainStep:
        """A ``then`` entry of the card (``{name, config, structured, quantizes}``; cards written before
        ``quantizes`` was recorded: a method with ``bits`` or a ``dtype`` quantizes)."""
        config = entry.get("config") or {}
        return cls(entry["name"], config, bool(entry.get("structured", True)),
                   bool(entry.get("quantizes", "bits" in config or "dtype" in config)))


@dataclass(frozen=True)
class ModelOrigin:
    """What the compressed model started from, and its ``model_type``."""
    compressed: str
    model_type: str | None


@dataclass(frozen=True)
class Headline:
    """The task's metric on dev (an LLM suite: the mean accuracy of the tasks above chance); kept = compressed / base."""
    metric: str
    base: Percent | None
    compressed: Percent | None
    kept: NonNegative | None


@dataclass(frozen=True)
class RolePair:
    """One set's metrics for each model (classification: accuracy, n, hard / easy, groups …; generation:
    ROUGE, METEOR, n …; an LLM task: n, metric, accuracy, acc, acc_norm; rolling: perplexities)."""
    base: SET_METRICS
    compressed: SET_METRICS


@dataclass(frozen=True)
class Challenge:
    """Pooled challenge accuracy of both models (classification)."""
    sets: list[str]
    base: Fraction | None
    compressed: Fraction | None


@dataclass(frozen=True)
class Bias:
    """Relative bias F_bias (Du et al., eq. 1) from each model's relative dev-challenge gap; meaningful
    false when the base gap is <= 0 or the base is near chance."""
    gap_base: float | None
    gap_compressed: float | None
    f_bias: float | None
    meaningful: bool | None = _optional()
    undefined: str | None = _optional()


@dataclass(frozen=True)
class HardEasy:
    """Accuracy on the hard and the easy dev examples (variance-based difficulty), per model."""
    base: JSON | None
    compressed: JSON | None


@dataclass(frozen=True)
class Calibration:
    """Expected calibration error and overconfidence per set and model (``metrics/calibration.py``)."""
    bins: Count
    sets: dict[str, JSON]


@dataclass(frozen=True)
class Params:
    """Parameter counts and sizes on disk of both models; ``stored``: the saved folder's bits per weight."""
    base: JSON
    compressed: JSON
    ratio: NonNegative
    nonzero_ratio: NonNegative
    stored: JSON | None


@dataclass(frozen=True)
class Speed:
    """Base vs compressed speed, timed interleaved (``timed``), or the one sentence why not
    (``why_not_timed``); ``meaningful``: the dense computation changed; ``engine``: what ran that timing;
    ``served``: both folders timed in vLLM, or why not."""
    timed: bool
    setting: str
    runtime: str
    meaningful: bool
    why_not_timed: str | None = _optional()
    mode: str | None = _optional()
    config: JSON | None = _optional()
    threads: Count | None = _optional()
    device: str | None = _optional()
    times_s: JSON | None = _optional()
    latency_ms: dict[str, NonNegative] | None = _optional()
    throughput_per_s: dict[str, NonNegative] | None = _optional()
    load_average: JSON | None = _optional()
    timing: JSON | None = _optional()
    decode_ms_per_token: JSON | None = _optional()
    decode_ms_per_token_batch: JSON | None = _optional()
    flop_limit: JSON | None = _optional()
    engine: str | None = _optional()  # what ran the timing above (metrics/speed.in_process_engine)
    served: JSON | None = _optional()  # base and compressed folders timed in vLLM (serving/speed.py), or why not


@dataclass(frozen=True)
class Agreement:
    """Share of examples where the compressed model (as deployed) predicts what the base predicts."""
    sets: dict[str, Fraction | None]
    pooled: Fraction | None
    n: Count


@dataclass(frozen=True)
class Deployment:
    """The runtime the compressed model was evaluated in, its quantization, its agreement with the base."""
    runtime: str
    base_runtime: str
    quantization: list[JSON]
    agreement: Agreement


@dataclass(frozen=True)
class Interval:
    """A seeded percentile-bootstrap interval of an accuracy (n = 0: accuracy, low, high null)."""
    accuracy: Fraction | None
    low: Fraction | None
    high: Fraction | None
    n: Count


@dataclass(frozen=True)
class Intervals:
    """Bootstrap intervals: per set and model, hard / easy, challenge, F_bias (paired), and the paired
    compressed − base difference (``delta``)."""
    method: str
    confidence: Fraction
    n_resamples: Count
    seed: Count
    sets: dict[str, dict[str, Interval]]
    hard_easy: dict[str, dict[str, Interval]] | None
    challenge: dict[str, Interval] | None
    f_bias: JSON | None
    delta: JSON | None


@dataclass(frozen=True)
class Training:
    """Epochs each model saw (null: unknown, e.g. a given teacher)."""
    base_epochs: NonNegative | None
    student_init: str
    fine_tunes: list[JSON]
    compressed_extra_epochs: NonNegative | None
    compressed_epochs: NonNegative | None
    base: str


@dataclass(frozen=True)
class Environment:
    """Versions, hardware, the compression step's and the whole run's peak memory, when the card was made."""
    created: str
    versions: JSON
    hardware: JSON
    compress_memory: JSON | None
    run_memory: JSON | None


@dataclass(frozen=True)
class LanguageModel:
    """Held-out perplexity of both models (causal LMs)."""
    base: JSON
    compressed: JSON


@dataclass(frozen=True)
class LlmSuite:
    """An LLM suite's comparison (``report/llm_section.py``): engine, per-task paired numbers (accuracy
    deltas, flips, KL, hard / easy), the headline over the tasks above chance, pooled numbers, task pairs,
    the scoring path and the stopping rule."""
    engine: JSON
    tasks: dict[str, JSON]
    headline_tasks: list[str]
    headline: JSON | None
    pooled: JSON | None
    pairs: list[JSON]
    kl_basis: str | None = _optional()
    scoring: JSON | None = _optional()
    stopping: JSON | None = _optional()
    divergence: JSON | None = _optional()  # along the base's own answers (llm/card.add_divergence)


@dataclass(frozen=True, kw_only=True)
class Paired(Document):
    """Two models compared on the same items (``report.card.comparison``): the sections a card and
    ``forgetless.evaluate(model, data, base=...)`` share."""
    task: TaskInfo
    headline: Headline
    sets: dict[str, RolePair]
    challenge: Challenge | None
    bias: Bias | None
    hard_easy: HardEasy | None
    calibration: Calibration | None
    intervals: Intervals | None
    warnings: list[str]
    llm: LlmSuite | None = _optional()
    zero_shot: JSON | None = _optional()
    language_model: LanguageModel | None = _optional()

    def sections(self) -> dict:
        """The comparison's sections by name (what a ``Card`` or a ``Comparison`` is made of)."""
        return {f.name: getattr(self, f.name) for f in fields(Paired)}


@dataclass(frozen=True, kw_only=True)
class Card(Paired):
    """A forgetless report card: what compressing one model cost, measured against its base on the same items."""
    schema: Literal["forgetless-report-2"]
    kind: Kind
    method: MethodInfo
    model: ModelOrigin
    params: Params
    speed: Speed
    deployment: Deployment
    training: Training | None
    notes: list[str]
    run: JSON
    seed: Count
    command: str
    environment: Environment
    robustness: JSON | None = _optional()
    provenance: JSON | None = _optional()
    recipe: JSON | None = _optional()
    predictions: str | None = _optional()
    plots: list[str] | None = _optional()

    def __post_init__(self):
        _check_kinds(self)
        _check_values(self)

    @classmethod
    def json_schema(cls) -> dict:
        """The JSON Schema of ``report.json`` (draft 2020-12)."""
        return json_schema(cls, SCHEMA_ID, "forgetless report card")


def _check_kinds(card: Card) -> None:
    """Which sections each kind of task and model has."""
    labelled = task_kind(card.kind.task).labelled
    for name in ("challenge", "bias", "hard_easy"):
        if labelled != (getattr(card, name) is not None):
            raise ValueError(f"section {name} must be present exactly for classification tasks")
    if card.calibration is not None and not labelled:
        raise ValueError("calibration is a classification section")
    if task_kind(card.kind.task).suite != (card.llm is not None):
        raise ValueError("the llm section must be present exactly for lm-eval tasks (a suite)")
    causal = card.kind.model in LM  # the model kinds scored by likelihood (zero-shot, held-out perplexity)
    if causal != (card.zero_shot is not None):
        raise ValueError("zero_shot must be present exactly for causal-lm models")
    if card.language_model is not None and not causal:
        raise ValueError("language_model (held-out perplexity) is a causal-lm section")


def _check_values(card: Card) -> None:
    """Each set's n and metric (a number: a JSON integer, ``1`` as jq writes it, is one), the headline's
    accuracy a fraction, the speed's figures or reason, the deployment's runtime, the intervals."""
    metric = card.task.metric
    for name, pair in card.sets.items():
        for role, metrics in (("base", pair.base), ("compressed", pair.compressed)):
            if not _is_number(metrics.get("n")) or not (metrics.get(metric) is None or _is_number(metrics[metric])):
                raise ValueError(f"set {name} / {role} lacks n or a numeric {metric}")
    for role in ("base", "compressed"):
        value = getattr(card.headline, role)
        if card.headline.metric == "accuracy" and value is not None and value > 1:
            raise ValueError(f"headline.{role}: {value!r} is out of range; expected an accuracy in [0, 1]")
    speed = card.speed
    if not speed.timed and (speed.why_not_timed is None or speed.latency_ms is not None or speed.timing is not None):
        raise ValueError("a speed not timed says why (why_not_timed) and holds no figures")
    if speed.timed and any(not {"base", "compressed", "speedup"} <= set(part or {})
                           for part in (speed.latency_ms, speed.throughput_per_s)):
        raise ValueError("a timed speed holds latency_ms and throughput_per_s: base, compressed and speedup")
    if card.deployment.runtime != speed.runtime:
        raise ValueError(f"deployment.runtime {card.deployment.runtime!r} != speed.runtime {speed.runtime!r}")
    for name, roles in (card.intervals.sets if card.intervals else {}).items():
        for role, interval in roles.items():
            if interval.n and not interval.low <= interval.accuracy <= interval.high:
                raise ValueError(f"the interval of {name} / {role} does not contain its accuracy")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True, kw_only=True)
class Comparison(Paired):
    """``forgetless.evaluate(model, data, base=...)``: the paired comparison of two models on the same items, in
    the card's sections, with their prediction agreement and both models' parameter counts."""
    agreement: Agreement | None
    params: dict[str, JSON]
    to_dict = Document.to_json  # the name an evaluation result answers to

    def summary(self) -> str:
        """The comparison in a few lines a person reads (``print(compared)``): ``report/comparison_text.py``."""
        from .comparison_text import comparison_text

        return comparison_text(self)

    __str__ = summary


@dataclass(frozen=True)
class Scores(Document):
    """``forgetless.evaluate(model, data)``: one model's scores on every set of the task (a set's metrics as in
    the card's ``sets``), the pooled challenge accuracy (classification), its parameter counts, and for a causal
    LM how it was prompted (``zero_shot``) and its held-out perplexity (``language_model``)."""
    sets: dict[str, JSON]
    params: JSON
    challenge_pooled: Fraction | None = _optional()
    pooled_sets: list[str] | None = _optional()
    zero_shot: JSON | None = _optional()
    language_model: JSON | None = _optional()
    to_dict = Document.to_json
