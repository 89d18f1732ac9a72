"""The config tree (``forgetless.config``) ⇄ the names users type: command-line flags, flat recipe
keys, dotted keys and nested YAML.

Every option of the tree has one *path* (``train.learning_rate``, ``method.ratio``,
``objective.lam``) and, when it is on the command line, one *flag* (``--lr``, ``--ratio``,
``--objective-lam``) whose underscore form is its flat key (``lr``, ``ratio``, ``objective_lam``):
the keys of recipes written before the tree existed, still read. The options of ``method`` and
``objective`` are the fields of every registered config (an option must belong to the chosen one).
``build`` turns any mix of these keys into a config; ``to_recipe`` writes the tree back. Standard
library only (the method and objective configs it reads import no torch).
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass

from .errors import ConfigError
from .schemes import COMMAND_LINE, SCHEMES, typed_key, with_scheme
from .options import as_dict, coerce, default_of, flag_name, hint_of, leaves
from .registry import METHODS, OBJECTIVES

CHOSEN = {"method": METHODS, "objective": OBJECTIVES}  # fields whose config class is chosen by name
OBJECTIVE_PREFIX = "objective-"
LEGACY = {"fine_tune": "method.recovery"}  # old recipe keys (model/recipe.yaml of earlier versions)


@dataclass
class Leaf:
    """One option of the tree: where it lives, its flag, and (method / objective options) which
    registered configs own it."""

    path: tuple[str, ...]
    cls: type
    field: dataclasses.Field
    owners: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        negate = self.field.metadata.get("negate")
        if self.owners:  # a method / objective option
            return "--" + OBJECTIVE_PREFIX * (self.path[0] == "objective") + self.field.name.replace("_", "-")
        return "--" + (negate or flag_name(self.cls, self.field))

    @property
    def key(self) -> str:
        return self.flag[2:].replace("-", "_")

    @property
    def dotted(self) -> str:
        return ".".join(self.path)

    @property
    def cli(self) -> bool:
        return self.field.metadata.get("cli", True)


def _is_config(hint) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def table(cls: type) -> list[Leaf]:
    """Every option of the tree rooted at ``cls``, nested configs and chosen configs included."""
    out: list[Leaf] = []
    for f in leaves(cls):
        hint = hint_of(cls, f.name)[0]
        if _is_config(hint):
            out += [Leaf((f.name,) + leaf.path, leaf.cls, leaf.field) for leaf in table(hint)]
            continue
        out.append(Leaf((f.name,), cls, f))
        if f.name in CHOSEN:
            out += _chosen_options(f.name, CHOSEN[f.name])
    return out


def _chosen_options(role: str, registry) -> list[Leaf]:
    seen: dict[str, Leaf] = {}
    for name in registry.names():
        cls = registry.config_class(name)
        for f in dataclasses.fields(cls) if cls is not None else ():  # every field is an option
            if f.name in seen:
                seen[f.name].owners += (name,)
            else:
                seen[f.name] = Leaf((role, f.name), cls, f, (name,))
    return list(seen.values())


def index(cls: type) -> dict[str, Leaf]:
    """Flat keys (command-line options) and dotted paths → their option."""
    found: dict[str, Leaf] = {}
    for leaf in table(cls):
        found[leaf.dotted] = leaf
        if leaf.cli:
            found.setdefault(leaf.key, leaf)
    return found


def flatten(values: dict, prefix: str = "") -> dict:
    """Nested mappings → dotted keys; ``method: {name: heads, ratio: 0.5}`` → ``method: heads``,
    ``method.ratio: 0.5``. Lists (``then``, ``seeds``) stay values."""
    flat: dict = {}
    for key, value in values.items():
        key = f"{prefix}{key}"
        if isinstance(value, dict) and key not in ("objective_options",):
            inner = dict(value)
            if key in CHOSEN and "name" in inner:
                flat[key] = inner.pop("name")
            flat.update(flatten(inner, key + "."))
        else:
            flat[key] = value
    return flat


def build(cls: type, values: dict, source: str = COMMAND_LINE):
    """A config of type ``cls`` (``RunConfig``, ``SweepConfig``, ``ProfileConfig`` …) from flat keys,
    dotted keys or nested mappings; unknown keys and options of another method are errors naming
    the key and ``source``."""
    known = index(cls)
    given: dict[tuple, tuple] = {}  # path → (value, key as the user wrote it)
    flat = flatten(values)
    if "scheme" in known and flat.get("scheme") is not None:  # a scheme's methods under the options given
        if isinstance(flat.get("then"), list):
            flat["then"] = [then_mapping(item, typed_key("then", source)) if isinstance(item, str) else item
                            for item in flat["then"]]
        flat = with_scheme(flat, source, _method_options(flat, known))
    for key, value in flat.items():
        if key in LEGACY and LEGACY[key] in known:
            value, key = _legacy_recovery(value, source), LEGACY[key]
        leaf = known.get(key)
        if leaf is None:
            close = difflib.get_close_matches(key, list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{source}: unknown key {key!r}{hint}")
        if leaf.field.metadata.get("negate") and key == leaf.key:
            value = not coerce(leaf.cls, leaf.field.name, value, typed_key(key, source))
        given[leaf.path] = (value, key)
    try:
        return _assemble(cls, given, (), source)
    except ConfigError as exc:  # a range or choice of a built config: name the recipe file too
        if source == COMMAND_LINE or exc.args[0].startswith(source):
            raise
        raise type(exc)(f"{source}: {exc.args[0]}") from None


def _method_options(flat: dict, known: dict[str, Leaf]) -> dict[str, str]:
    """The keys of ``flat`` that are method options (``ignore``, ``method.bits``), each with its field name."""
    return {key: known[key].path[1] for key in flat
            if key in known and len(known[key].path) == 2 and known[key].path[0] == "method"}


def _legacy_recovery(value, source: str) -> str:
    """``recovery`` from the old ``fine_tune: true|false`` of recipes and saved ``model/recipe.yaml``."""
    text = str(value).strip().lower()
    if text not in ("true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"{source}: key 'fine_tune' (old name of recovery): expected true or false, got {value!r}")
    return "fine-tune" if text in ("true", "1", "yes") else "none"


def _assemble(cls: type, given: dict, prefix: tuple, source: str):
    kwargs: dict = {}
    for f in dataclasses.fields(cls):
        path = prefix + (f.name,)
        hint = hint_of(cls, f.name)[0] if f.metadata else None
        if _is_config(hint):
            if any(p[:len(path)] == path for p in given):
                kwargs[f.name] = _assemble(hint, given, path, source)
            continue
        if f.name in CHOSEN and not prefix:
            kwargs[f.name] = _chosen(cls, f, given, source)
        elif f.name == "then" and not prefix and path in given:
            kwargs[f.name] = [parse_then(item, typed_key(given[path][1], source)) for item in given[path][0] or []]
        elif f.name == "objective_options" and path in given:
            kwargs[f.name] = dict(given[path][0])
        elif path in given:
            value, key = given[path]
            kwargs[f.name] = coerce(cls, f.name, value, typed_key(key, source)) if f.metadata else value
    config = cls(**kwargs)
    if hasattr(config, "objectives"):  # a sweep: objective options belong to the listed objectives
        config.objective_options = _sweep_objective_options(config, given, source)
    return config


def _chosen(cls: type, f: dataclasses.Field, given: dict, source: str):
    """The method / objective config: the chosen name (or the default) built with its options."""
    role, registry = f.name, CHOSEN[f.name]
    if role == "objective" and any(x.name == "objectives" for x in dataclasses.fields(cls)):
        return None  # a sweep lists its objectives (their options: _sweep_objective_options)
    name = given.get((role,), (None,))[0]
    if name is not None and not isinstance(name, str):
        return name  # a config instance (Python)
    if role == "method" and name in SCHEMES:
        raise ConfigError(f"{typed_key(given[(role,)][1], source)} {name}: a quantization scheme, not a method; give "
                          f"--scheme {name}")
    if name is None and role == "objective":
        method = given.get(("method",), (None,))[0] or default_of(next(x for x in dataclasses.fields(cls)
                                                                          if x.name == "method"))
        name = (METHODS.config_class(method) if isinstance(method, str) else type(method)).default_objective
    name = name if name is not None else default_of(f)
    options = {path[1]: value for path, value in given.items() if len(path) == 2 and path[0] == role}
    owned = registry.option_names(name)
    recovery = options.pop("recovery", None) if role == "method" and "recovery" not in owned else None
    for option, (value, key) in options.items():
        if option not in owned:
            owners = ", ".join(n for n in registry.names() if option in registry.option_names(n))
            raise ConfigError(f"{typed_key(key, source)} does not apply to {role} {name} (it belongs to {owners})")
    config_cls = registry.config_class(name)
    typed = {option: coerce(config_cls, option, value, typed_key(key, source)) for option, (value, key) in options.items()}
    config = registry.make_config(name, typed)
    if recovery is not None:
        _without_recovery_step(config, recovery[0], f"{typed_key(recovery[1], source)} {recovery[0]}")
    return config


def _without_recovery_step(config, value, shown: str) -> None:
    """``recovery`` (``shown``: as the user typed it) given to a method that has no such option: ``none`` asks
    for nothing and passes when the method trains nothing (rtn, awq, smoothquant: the README's ``--recovery
    none`` works beside any one-shot method or ``--scheme``); anything else is one error."""
    if value == "none" and not config.recovers:
        return
    if config.recovers:
        raise ConfigError(f"{shown}: {config.name} always trains as it compresses (it has no recovery option); "
                          "leave recovery out")
    raise ConfigError(f"{shown}: {config.name} trains nothing after compressing (it has no recovery step); only "
                      "recovery none applies, or leave it out")


def _sweep_objective_options(config, given: dict, source: str) -> dict:
    options = dict(config.objective_options)
    for path, (value, key) in given.items():
        if len(path) == 2 and path[0] == "objective":
            owners = [n for n in config.objectives if path[1] in OBJECTIVES.option_names(n)]
            if not owners:
                raise ConfigError(f"{typed_key(key, source)} does not apply to objective(s) "
                                  f"{', '.join(config.objectives)}")
            options[path[1]] = coerce(OBJECTIVES.config_class(owners[0]), path[1], value, typed_key(key, source))
    for name in config.objectives:  # every objective's config builds with the options it takes
        OBJECTIVES.make_config(name, {k: v for k, v in options.items() if k in OBJECTIVES.option_names(name)})
    return options


def parse_then(item, where: str = "--then"):
    """A method config from ``METHOD[:OPTION=VALUE,...]`` (the command line) or a mapping
    ``{name: METHOD, OPTION: VALUE}`` (a recipe) or a config (Python)."""
    if isinstance(item, dict):
        options = dict(item)
        name = options.pop("name", None)
        if not isinstance(name, str):
            raise ConfigError(f"{where}: each item needs a method name ({item!r})")
    elif isinstance(item, str):
        options = then_mapping(item, where)
        name = options.pop("name")
    else:
        return METHODS.config(item)
    recovery = options.pop("recovery", None) if METHODS.config_class(name) and "recovery" not in \
        METHODS.option_names(name) else None
    config = METHODS.make_config(name, options)
    if recovery is not None:
        _without_recovery_step(config, recovery, f"{where} {name}:recovery={recovery}")
    return config


def then_mapping(item: str, where: str = "--then") -> dict:
    """``METHOD[:OPTION=VALUE,...]`` as ``{"name": METHOD, OPTION: VALUE}`` (values as text)."""
    name, _, rest = item.partition(":")
    options = {}
    for part in filter(None, (x.strip() for x in rest.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise ConfigError(f"{where} {item}: expected OPTION=VALUE, got {part!r}")
        key = key.strip().replace("-", "_")
        if key in options:
            raise ConfigError(f"{where} {item}: option {key!r} is given twice; give it once")
        options[key] = value.strip()
    return {"name": name.strip(), **options}


def to_recipe(config) -> dict:
    """The tree as plain data for YAML: nested mappings, the method / objective as ``{name: …,
    options}``, ``then`` as a list of those."""
    data = as_dict(config)
    if "objectives" in data:  # a sweep names its objectives; the single objective field does not apply
        data.pop("objective", None)
    return data
