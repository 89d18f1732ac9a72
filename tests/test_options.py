"""The option schema's checks on configs built in Python (``options.Config``, issue 54): a value of the wrong
type is one error naming the field, the value and its type (``GptqConfig(bits='4')`` said "bits=4: not one
of 2, 3, 4, 8"), for every field of every config; a single string where a list of names is expected is a
list of one (``WandaConfig(targets='re:.*q_proj')`` was split into characters)."""
from __future__ import annotations

import dataclasses
import re

import pytest

from forgetless import config as schema
from forgetless.errors import ConfigError
from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.wanda.config import WandaConfig
from forgetless.options import hint_of
from forgetless.registry import METHODS, OBJECTIVES

SECTIONS = (schema.TaskConfig, schema.TrainConfig, schema.EvalConfig, schema.SpeedConfig, schema.CleverConfig,
            schema.RunConfig, schema.SweepConfig, schema.ProfileConfig)


def every_config() -> list[tuple[type, dict]]:
    """Every config class with options that build it (a method's ``smoke``, else none)."""
    registered = [cls for registry in (METHODS, OBJECTIVES) for name in registry.names()
                  if (cls := registry.config_class(name)) is not None]
    return [(cls, dict(getattr(cls, "smoke", {}) or {})) for cls in (*registered, *SECTIONS)]


def fields_of(kind: type, is_list: bool = False) -> list[tuple[type, dict, str]]:
    return [(cls, smoke, f.name) for cls, smoke in every_config() for f in dataclasses.fields(cls)
            if f.metadata and hint_of(cls, f.name) == (kind, is_list)]


def test_the_reported_case():
    with pytest.raises(ConfigError, match=r"^bits='4': expected a whole number, got str '4'$"):
        GptqConfig(bits="4")


@pytest.mark.parametrize("cls, smoke, name", fields_of(int), ids=lambda x: getattr(x, "__name__", str(x)))
def test_every_whole_number_field_refuses_text_naming_its_type(cls, smoke, name):
    for value, shown in (("4", "str '4'"), (4.0, "float 4.0"), (True, "bool True")):
        with pytest.raises(ConfigError, match=rf"{re.escape(repr(value))}: expected a whole number, got {shown}$"):
            cls(**{**smoke, name: value})


@pytest.mark.parametrize("cls, smoke, name", fields_of(float) + fields_of(bool), ids=lambda x: getattr(x, "__name__", str(x)))
def test_every_number_and_switch_field_refuses_text(cls, smoke, name):
    expected = "a number" if hint_of(cls, name)[0] is float else "True or False"
    with pytest.raises(ConfigError, match=rf"'0\.5': expected {expected}, got str '0\.5'$"):
        cls(**{**smoke, name: "0.5"})


def test_a_switch_is_named_as_python_names_it():
    with pytest.raises(ConfigError, match=r"^asymmetric='false': expected True or False, got str 'false'$"):
        GptqConfig(asymmetric="false")


def test_none_where_a_value_is_required_is_refused():
    with pytest.raises(ConfigError, match=r"^group_size=None: expected a whole number, got None$"):
        GptqConfig(group_size=None)


@pytest.mark.parametrize("cls", sorted({cls for cls, _, _ in fields_of(str, True)}, key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
def test_a_single_name_for_a_list_of_names_is_a_list_of_one(cls):
    smoke = dict(getattr(cls, "smoke", {}) or {})
    for name in [n for c, _, n in fields_of(str, True) if c is cls]:
        value = next((x for x in ("Linear", "re:.*q_proj", "ce", "0.5", "xsum") if _builds(cls, smoke, name, x)), None)
        if value is not None:  # a name the field takes (its choices, the names it checks)
            assert getattr(cls(**{**smoke, name: value}), name) == [value], (cls.__name__, name)


def _builds(cls, smoke, name, value) -> bool:
    try:
        cls(**{**smoke, name: [value]})
    except ConfigError:
        return False
    return True


def test_targets_and_ignore_as_one_string():
    config = WandaConfig(targets="re:.*q_proj", ignore="re:.*layers\\.0\\.")
    assert (config.targets, config.ignore) == (["re:.*q_proj"], ["re:.*layers\\.0\\."])
    with pytest.raises(ConfigError, match=r"^targets=1: expected text, got int 1$"):
        WandaConfig(targets=[1])
