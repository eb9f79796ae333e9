"""One declaration of a Lambda function's environment: each setting's variable, type and
default, in a frozen dataclass that the handler reads at cold start, and that its construct
(cdk/function_configs.py, from the deployment's settings) and the demo build and render. A
setting the construct sets is a field the handler reads; none can be dropped between them.

A variable that is missing with no default, or that does not parse, is refused with a
:class:`ConfigError` naming it, its value and what was expected.
"""

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Final, Generic, Self, TypeVar, cast

T = TypeVar("T")
E = TypeVar("E", bound=StrEnum)
_VARIABLE: Final = "variable"


class ConfigError(ValueError):
    """A function's environment variable that is missing or cannot be read."""


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How a value travels in an environment variable: ``parse`` raises ValueError on what
    is not ``expected``; ``render`` gives back the text ``parse`` reads."""

    expected: str
    parse: Callable[[str], T]
    render: Callable[[T], str]


@dataclass(frozen=True)
class Variable:
    name: str
    codec: Codec[Any]
    #: Set by Lambda itself, not by the function's configuration: a reserved variable such as
    #: AWS_REGION ("you can't set them in the function configuration",
    #: https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
    runtime: bool = False

    def read(self, raw: str) -> Any:
        try:
            return self.codec.parse(raw)
        except ValueError as err:
            raise ConfigError(
                f"{self.name}={raw!r} is not valid: expected {self.codec.expected}"
            ) from err


def variable(name: str, codec: Codec[Any], *, default: Any = MISSING, runtime: bool = False) -> Any:
    """A field of a function's configuration, read from the environment variable ``name``."""
    metadata = {_VARIABLE: Variable(name, codec, runtime)}
    if default is MISSING:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


def _text(raw: str) -> str:
    if not raw:
        raise ValueError("empty")
    return raw


def _whole(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError("below 1")
    return value


def _number(value: float) -> str:
    """25.0 as "25", 6.88 as "6.88": exact (repr), and what ``float`` reads back."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _price(raw: str) -> float:
    value = float(raw)
    if not math.isfinite(value) or value < 0:
        raise ValueError("not a price")
    return value


def _percent(raw: str) -> float:
    value = float(raw)
    if not 0 < value < 100:
        raise ValueError("not a percent")
    return value


def _names(raw: str) -> tuple[str, ...]:
    return tuple(part for part in raw.split(",") if part)


def _join(names: tuple[str, ...]) -> str:
    for name in names:
        if not name or "," in name:
            raise ConfigError(f"{name!r} cannot travel in a comma-separated list")
    return ",".join(names)


def _flag(raw: str) -> bool:
    if raw not in ("true", "false"):
        raise ValueError(f"{raw!r} is not true or false")
    return raw == "true"


def _pairs(raw: str) -> dict[str, tuple[str, str]]:
    document = json.loads(raw)
    if not isinstance(document, dict) or not all(
        isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v)
        for v in document.values()
    ):
        raise ValueError("not an object of pairs")
    return {str(k): (v[0], v[1]) for k, v in document.items()}


def _render_pairs(pairs: dict[str, tuple[str, str]]) -> str:
    return json.dumps({k: list(v) for k, v in pairs.items()}, separators=(",", ":"))


TEXT: Final = Codec[str]("a non-empty string", _text, str)
WHOLE: Final = Codec[int]("a whole number above 0", _whole, str)
USD: Final = Codec[float]("a price in USD, 0 or more", _price, _number)
PERCENT: Final = Codec[float]("a percent above 0 and below 100", _percent, _number)
FLAG: Final = Codec[bool]('"true" or "false"', _flag, lambda on: "true" if on else "false")
#: Comma-separated names (buckets, volume ids, alarm names); empty for none.
NAMES: Final = Codec[tuple[str, ...]]("comma-separated names", _names, _join)
#: Name -> (severity, title), as JSON.
PAIRS: Final = Codec[dict[str, tuple[str, str]]](
    'a JSON object of ["severity", "title"] pairs', _pairs, _render_pairs
)


def choice(enum: type[E]) -> Codec[E]:
    """One of a string enumeration's values."""
    return Codec[E](" or ".join(member.value for member in enum), enum, str)


class FunctionConfig:
    """Base of a function's configuration: a frozen, keyword-only dataclass whose fields are
    each declared with :func:`variable`."""

    @classmethod
    def variables(cls) -> dict[str, Variable]:
        """Field name -> its variable, in declaration order."""
        return {f.name: _variable_of(f) for f in fields(cast(Any, cls))}

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Self:
        values: dict[str, Any] = {}
        for f in fields(cast(Any, cls)):
            var = _variable_of(f)
            raw = environ.get(var.name)
            if raw is None:
                if f.default is MISSING and f.default_factory is MISSING:
                    raise ConfigError(f"{var.name} is not set: expected {var.codec.expected}")
                continue
            values[f.name] = var.read(raw)
        return cls(**values)

    @classmethod
    def current(cls) -> Self:
        """The configuration in this process's environment, read once: at the first
        invocation of a container, again only if the environment changed (as the demo and
        tests change it between invocations; Lambda never does)."""
        names = [v.name for v in cls.variables().values()]
        key = tuple(os.environ.get(name) for name in names)
        cached = _CURRENT.get(cls)
        if cached is None or cached[0] != key:
            cached = (key, cls.from_environ(os.environ))
            _CURRENT[cls] = cached
        return cast(Self, cached[1])

    def replaced(self, **values: Any) -> Self:
        return cast(Self, replace(cast(Any, self), **values))

    def environment(self, *, runtime: bool = False) -> dict[str, str]:
        """The variables a construct sets (``runtime``: and those Lambda sets, for a caller
        that stands in for Lambda, as the demo does); a field at None is left unset. Each is
        read back as the handler will read it: a value the handler would refuse at its start
        is refused here, at synth, with the same :class:`ConfigError`."""
        out = {}
        for name, var in self.variables().items():
            value = getattr(self, name)
            if value is None or (var.runtime and not runtime):
                continue
            out[var.name] = var.codec.render(value)
            var.read(out[var.name])
        return out


_CURRENT: dict[type, tuple[tuple[str | None, ...], FunctionConfig]] = {}


def _variable_of(f: Field[Any]) -> Variable:
    var = f.metadata.get(_VARIABLE)
    if not isinstance(var, Variable):
        raise TypeError(f"field {f.name} is not declared with variable()")
    return var
