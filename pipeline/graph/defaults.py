"""Params that ``params.yaml`` leaves out: their schema defaults, written into ``dvc.yaml``.

DVC itself resolves each ``${section.key}`` template of a stage's ``cmd`` and reads each key of its
``params:`` from params.yaml, and stops on a key that is not there (``Could not find
'split.min_documents'``, ``Parameters 'x' are missing``), although the schema
(:mod:`pipeline.infra.schema.params`) gives most keys a default. So once the stages are built,
:func:`apply_defaults` replaces every template of a missing key by its schema default, written
as DVC would write that value on the command line (:func:`command_text`), and drops the key from
the stage's ``params:``; a missing key without a default (a required one, such as ``data.source``
or ``split.dev``) is a :class:`UserError` naming it (:func:`missing_key`). The plan reads the
structural params completed the same way (:meth:`Schema.complete`).

The schema is read as data (:data:`SCHEMA`: :meth:`Schema.from_dataclasses` of
``pipeline.infra.schema.params.SECTIONS`` and, for the ``variants`` section, each variant's settings
class, :func:`with_variants`; none of them imports torch): their defaults are the default run's,
the ones ``make params`` writes into params.yaml, and a profile is an overlay
(:meth:`Schema.overlaid`).

A key written in as its default is no param of any stage, so adding it to params.yaml later
changes no stage's params: the graph stage then depends on params.yaml as a whole
(:func:`pipeline.graph.build.build`), so any edit of it reruns ``stages.graph --check``, which
finds dvc.yaml stale (the template is back in the regenerated graph) and says to run
``make graph``.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import SECTIONS, VARIANT_SECTION, param_key
from pipeline.models.registry import all_variants, params_section
from pipeline.variants._spec import setting_fields

# DVC's template syntax (dvc/parsing/interpolate.py KEYCRE): ``${expr}``, not after a backslash.
TEMPLATE = re.compile(r"(?<!\\)\$\{(?P<inner>.*?)\}")
# The names DVC itself defines inside a ``foreach`` / ``matrix`` stage; never params.
LOCALS = ("item", "key")
REQUIRED = dataclasses.MISSING


def missing_key(dotted: str, help_text: str = "") -> UserError:
    """The error for a key params.yaml must hold (no default): names it and what it is."""
    what = f" ({help_text})" if help_text else ""
    return UserError(f"params.yaml has no `{dotted}`{what}", path="params.yaml",
                     fix=f"add `{dotted}` to params.yaml (see the README's \"Parameters and "
                         "profiles\")")


@dataclasses.dataclass(frozen=True)
class Key:
    """One params key of the schema: its default (``REQUIRED``: none), the words its stage
    option reads as None (``""``: the key's own; a mapping-valued key's: per sub-key), its help
    (and a mapping-valued key's help per sub-key)."""

    default: Any = REQUIRED
    nones: Mapping[str, str] = dataclasses.field(default_factory=dict)
    help: str = ""
    helps: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Defaulted:
    """A params key params.yaml lacks and ``dvc.yaml`` uses the schema default of."""

    key: str     # dotted: ``split.min_documents`` (or a whole section: ``report``)
    text: str    # the value as the command line gets it: ``50``, ``--examples 3``
    shown: str   # the value for a reader: ``50``, ``{examples: 3}``, ``[2020, 2021]``

    @property
    def note(self) -> str:
        return (f"params.yaml has no {self.key}: dvc.yaml uses its default {self.shown}; add it "
                "to params.yaml to change it")


class Schema:
    """Each section's keys (:class:`Key`), in schema order. ``Schema({})`` knows no default:
    every key params.yaml lacks is then an error naming it."""

    def __init__(self, sections: Mapping[str, Mapping[str, Key]]) -> None:
        self.sections = sections

    @classmethod
    def from_dataclasses(cls, sections: Mapping[str, Iterable[tuple[type, Iterable[str] | None]]],
                         param_key: Callable[[dataclasses.Field], str]) -> Schema:
        """From ``pipeline.infra.schema.params.SECTIONS`` (section -> (dataclass, field names or None
        for all)) and its ``param_key`` (a field's key in params.yaml): a field's ``default`` or
        ``default_factory`` (a dataclass value becomes the mapping params.yaml would hold), its
        metadata ``none`` and ``help``."""
        def plain(value: Any) -> Any:
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                return {param_key(f): plain(getattr(value, f.name))
                        for f in dataclasses.fields(value)}
            return value

        def key(f: dataclasses.Field) -> Key:
            default = (f.default if f.default is not dataclasses.MISSING else
                       f.default_factory() if f.default_factory is not dataclasses.MISSING
                       else REQUIRED)
            nones = {"": f.metadata["none"]} if "none" in f.metadata else {}
            helps = {}
            if dataclasses.is_dataclass(default) and not isinstance(default, type):
                nones.update({param_key(g): g.metadata["none"]
                              for g in dataclasses.fields(default) if "none" in g.metadata})
                helps = {param_key(g): g.metadata.get("help", "")
                         for g in dataclasses.fields(default)}
            return Key(plain(default), nones, f.metadata.get("help", ""), helps)

        return cls({section: {param_key(f): key(f) for dc, names in parts
                              for f in dataclasses.fields(dc)
                              if names is None or f.name in tuple(names)}
                    for section, parts in sections.items()})

    def overlaid(self, overlay: Mapping[str, Any], source: str) -> Schema:
        """This schema with the values of ``overlay`` (nested as params.yaml) as its defaults: a
        mapping-valued key's (``data.columns``, ``variants.<name>``) merged per sub-key, any other
        value (a list too) replaced. A key the schema does not define is a :class:`UserError`
        naming it and ``source``, the file (or table) the overlay comes from."""
        def bad(dotted: str, what: str) -> UserError:
            return UserError(f"{source}: `{dotted}` {what}", path=source,
                             fix="check its spelling against params.yaml (`make params` writes "
                                 "every key with its help) and the README's \"Parameters and "
                                 "profiles\"")

        if not isinstance(overlay, Mapping):
            raise bad("(the whole file)", "is not a mapping of params.yaml sections")
        sections = {name: dict(keys) for name, keys in self.sections.items()}
        for section, values in overlay.items():
            if section not in sections:
                raise bad(str(section), "is no section of params.yaml")
            if not isinstance(values, Mapping):
                raise bad(str(section), "is a section: give it a mapping of its keys")
            for name, value in values.items():
                dotted = f"{section}.{name}"
                if name not in sections[section]:
                    raise bad(dotted, "is no key of params.yaml")
                key = sections[section][name]
                if isinstance(key.default, Mapping):
                    if not isinstance(value, Mapping):
                        raise bad(dotted, "holds keys: give it a mapping of them")
                    unknown = [str(k) for k in value if k not in key.default]
                    if unknown:
                        raise bad(f"{dotted}.{unknown[0]}", "is no key of params.yaml")
                    value = {**key.default, **value}
                elif isinstance(value, Mapping):
                    raise bad(dotted, "is a single value, not a mapping")
                sections[section][name] = dataclasses.replace(key, default=copy.deepcopy(value))
        return Schema(sections)

    def default(self, dotted: str) -> Any:
        """The default of ``section.key`` (of a mapping-valued key's sub-key too), or of a whole
        ``section`` as the mapping of its keys' defaults; :func:`missing_key` when it has none."""
        section, _, rest = dotted.partition(".")
        keys = self.sections.get(section)
        if keys is None:
            raise missing_key(dotted)
        if not rest:
            return {k: self.default(f"{section}.{k}") for k in keys}
        name, _, deeper = rest.partition(".")
        if name not in keys:
            raise missing_key(dotted)
        if keys[name].default is REQUIRED:
            raise missing_key(dotted, keys[name].help)
        value = copy.deepcopy(keys[name].default)
        for part in deeper.split(".") if deeper else ():
            if not isinstance(value, Mapping) or part not in value:
                raise missing_key(dotted)
            value = value[part]
        return value

    def nones(self, dotted: str) -> dict[str, str]:
        """The none words for the value at ``dotted`` (see :class:`Key`)."""
        section, _, rest = dotted.partition(".")
        keys = self.sections.get(section, {})
        if not rest:
            return {k: key.nones[""] for k, key in keys.items() if "" in key.nones}
        name, _, deeper = rest.partition(".")
        nones = keys[name].nones if name in keys else {}
        if deeper:   # a sub-key of a mapping-valued key: its own word
            return {"": nones[deeper]} if deeper in nones else {}
        return dict(nones)

    def defaulted(self, dotted: str) -> Defaulted:
        """``dotted``'s default as ``dvc.yaml`` writes it, and as a note shows it."""
        value, nones = self.default(dotted), self.nones(dotted)
        text = command_text(value, nones)
        return Defaulted(dotted, text, _flow(value, nones)
                         if isinstance(value, (Mapping, list, tuple)) else text)

    def complete(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with every key it lacks that has a default filled in (a copy); a lacking
        required key stays lacking, for the reader to name."""
        out = copy.deepcopy(dict(params))
        for section, keys in self.sections.items():
            values = out.setdefault(section, {})
            if not isinstance(values, dict):
                continue
            for name, key in keys.items():
                if name not in values and key.default is not REQUIRED:
                    values[name] = copy.deepcopy(key.default)
        return out


def present(params: Mapping[str, Any], dotted: str) -> bool:
    """Whether params.yaml holds ``dotted`` (``a.b``: ``params["a"]["b"]``)."""
    value: Any = params
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    return True


def command_text(value: Any, nones: Mapping[str, str] | None = None) -> str:
    """``value`` as DVC writes a ``${...}`` template of it into a ``cmd``: a scalar as ``str``
    (booleans ``true``/``false``; None as the option's none word, ``nones[""]``, which the stage
    reads as None, else DVC's ``None``), a list as its space-separated items, a mapping unpacked
    as DVC unpacks a dict (:func:`_unpacked`)."""
    nones = nones or {}
    if isinstance(value, Mapping):
        return _unpacked(value, nones)
    if value is None:
        return nones.get("", "None")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return " ".join(command_text(v) for v in value)
    return str(value)


def _unpacked(mapping: Mapping[str, Any], nones: Mapping[str, str]) -> str:
    """DVC's dict unpacking (``dvc.parsing.interpolate.to_str`` of a dict) with this project's
    ``.dvc/config``: ``parsing.bool boolean_optional`` (``--key`` / ``--no-key``) and
    ``parsing.list nargs`` (``--key a b``); strings shell-quoted, keys as written in params."""
    parts = []
    for k, v in mapping.items():
        if isinstance(v, bool):
            parts.append(f"--{k}" if v else f"--no-{k}")
        elif isinstance(v, str):
            parts.append(f"--{k} {shlex.quote(v)}")
        elif isinstance(v, (list, tuple)):
            if v:
                items = (shlex.quote(i) if isinstance(i, str) else str(i) for i in v)
                parts.append(f"--{k} {' '.join(items)}")
        elif v is None:
            parts.append(f"--{k} {nones.get(str(k), 'None')}")
        else:
            parts.append(f"--{k} {v}")
    return " ".join(parts)


def _flow(value: Any, nones: Mapping[str, str]) -> str:
    """A mapping or list default as params.yaml would write it (YAML flow style)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_flow(v, {'': nones.get(str(k), 'null')})}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v, {}) for v in value) + "]"
    return command_text(value, nones)


def apply_defaults(stages: Mapping[str, Any], params: Mapping[str, Any],
                   schema: Schema) -> tuple[dict[str, Any], list[Defaulted]]:
    """``stages`` with every ``${key}`` of a key params.yaml lacks replaced by its schema
    default and the key dropped from ``params:``, and the keys so defaulted (first use first).
    A lacking key without a default raises :class:`UserError` naming it. Stages are copied, not
    changed (their lists may be shared, e.g. the graph stage's :data:`~.plan.STRUCTURE`)."""
    used: dict[str, Defaulted] = {}

    def default(dotted: str) -> str:
        if dotted not in used:
            used[dotted] = schema.defaulted(dotted)
        return used[dotted].text

    out: dict[str, Any] = {}
    for name, stage in stages.items():
        looped = "foreach" in stage or "matrix" in stage
        spec = dict(stage.get("do", stage))

        def fill(match: re.Match[str]) -> str:
            dotted = match["inner"].strip()
            if looped and dotted.split(".")[0] in LOCALS:
                return match[0]
            return match[0] if present(params, dotted) else default(dotted)

        if "cmd" in spec:
            spec["cmd"] = TEMPLATE.sub(fill, spec["cmd"])
        if "params" in spec:
            kept = []
            for entry in spec["params"]:
                if not isinstance(entry, str) or present(params, entry):
                    kept.append(entry)
                else:
                    default(entry)   # a required key raises here
            if kept:
                spec["params"] = kept
            else:
                del spec["params"]
        out[name] = {**stage, "do": spec} if "do" in stage else spec
    # a whole section's note only where none of its keys has one (``report`` vs report.examples)
    return out, [d for d in used.values() if not any(k.startswith(f"{d.key}.") for k in used)]


def with_variants(schema: Schema) -> Schema:
    """``schema`` plus the ``variants`` section: each registry variant with settings as a key
    whose default is the mapping of its settings' defaults (its variant module's class). A
    time-free control has no section of its own: it reads its variant's (``params_section``)."""
    section = {}
    for name, variant in all_variants().items():
        settings = variant.settings
        if settings is None or params_section(name) != name:
            continue
        fields = setting_fields(settings)
        section[name] = Key({f.name: f.default for f in fields},
                            {f.name: f.metadata["none"] for f in fields if "none" in f.metadata},
                            f"the {name} variant's settings ({settings.__module__})",
                            {f.name: f.metadata.get("help", "") for f in fields})
    return Schema({**schema.sections, VARIANT_SECTION: section})


# Every param's default (pipeline/infra/schema/params.py, config.py and each variant's settings class),
# the default run's: for the keys a params.yaml leaves out, and what `make params` writes.
SCHEMA = with_variants(Schema.from_dataclasses(SECTIONS, param_key))
