"""Every registered objective: its config fields carry their CLI metadata, it builds its
implementation, and bad values are one error naming the flag."""
import dataclasses

import pytest

from forgetless.errors import ConfigError
from forgetless.registry import OBJECTIVES
from forgetless.training.objective import Objective


def test_every_field_has_help_and_every_config_builds_its_objective():
    names = OBJECTIVES.names()
    assert {"ce", "distil", "smooth", "focal", "focal-reweighted", "jtt", "rmc", "smart", "rdrop", "freelb",
            "child-tuning", "rose-first", "rose-second", "rose-ensemble", "nash-distil"} <= set(names)
    classes = [OBJECTIVES.config_class(name) for name in names]
    assert len(set(classes)) == len(names)  # one config class per name
    for name, cls in zip(names, classes):
        assert cls.name == name and "model_kinds" not in {f.name for f in dataclasses.fields(cls)}
        for f in dataclasses.fields(cls):
            assert f.metadata.get("help"), f"{name}: field {f.name} has no help"
        objective = OBJECTIVES.build(name)
        assert isinstance(objective, Objective) and type(objective.config) is cls
        assert objective.config.name == name and objective.config.model_kinds == cls.model_kinds
    assert OBJECTIVES.config_class("ce").model_kinds == ("classifier", "seq2seq", "causal-lm")
    assert OBJECTIVES.config_class("nash-distil").model_kinds == ("seq2seq",)


@pytest.mark.parametrize("name, options, message", [
    ("focal", {"gamma": -1}, r"gamma: -1.0 is out of range; valid: >= 0"),
    ("distil", {"lam": 1.5}, r"lam: 1.5 is out of range; valid: >= 0 and <= 1"),
    ("distil", {"temperature": 0}, r"temperature: 0.0 is out of range; valid: > 0"),
    ("rmc", {"sparsities": "0.5"}, r"sparsities=0.5: difficulty needs at least two sparsity levels"),
    ("rmc", {"sparsities": "0.5,1"}, r"sparsities=0.5,1: every sparsity must be in \(0, 1\)"),
    ("rmc", {"difficulty_schedule": "full"}, r"difficulty_schedule=full: not one of chain, oneshot"),
    ("jtt", {"lambda_up": 0}, r"lambda_up: 0.0 is out of range; valid: > 0"),
    ("smart", {"momentum": 1.0}, r"momentum=1.0: must be below 1"),
    ("rose-second", {"lower_quantile": 0.9, "upper_quantile": 0.5},
     r"lower_quantile=0.9 must be below upper_quantile=0.5"),
    ("nash-distil", {"kd_weight": 0, "ce_weight": 0}, r"kd_weight and ce_weight are both 0"),
    ("ce", {"gamma": 2}, r"unknown option\(s\) for objective 'ce': gamma; it accepts: nothing"),
])
def test_bad_values_name_the_flag(name, options, message):
    with pytest.raises(ConfigError, match=message):
        OBJECTIVES.make_config(name, options)


def test_rmc_reads_its_options_as_typed():
    config = OBJECTIVES.make_config("rmc", {"sparsities": "0.6,0.3", "alpha": "0.2", "recovery_epochs": "0"})
    assert config.sparsities == (0.3, 0.6) and config.alpha == 0.2 and config.recovery_epochs == 0.0
    difficulty = config.difficulty_config()
    assert (difficulty.sparsities, difficulty.schedule, difficulty.recovery_epochs) == ((0.3, 0.6), "chain", 0.0)
    smart = OBJECTIVES.make_config("smart", {"perturbation": "alg1_literal"})
    assert smart.step_size == 1e-3 and OBJECTIVES.make_config("smart", {}).step_size == 1e-5
