"""Parameter specifications: each learner and dataset declares its parameters as data.

The same specs validate a Python constructor call and a Hydra config, so a bad value fails before any
work with one line naming the parameter, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


class UserError(ValueError):
    """A mistake in the user's input; ``str()`` is the one-line message shown to the user."""


class DataError(UserError):
    """A data file that cannot be used: names the file, and the line where it applies."""

    def __init__(self, path: object, problem: str, line: int | None = None) -> None:
        where = f", line {line}" if line is not None else ""
        super().__init__(f"dataset.path={str(path)!r}{where}: {problem}")


class ParamError(UserError):
    """An invalid parameter value; ``str()`` is the one-line message shown to the user."""

    def __init__(self, name: str, value: Any, allowed: str) -> None:
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"{name}={value!r}: must be {allowed}")


@dataclass(frozen=True)
class Param:
    """One parameter: its name, type (int, float, str or bool), validity predicate and allowed values in words."""

    name: str
    type: type
    valid: Callable[[Any], bool]
    allowed: str
    nullable: bool = False

    def coerce(self, value: Any) -> Any:
        """Return ``value`` converted to ``type``, or raise :class:`ParamError`."""
        if value is None and self.nullable:
            return None
        if self.type in (str, bool):
            ok = isinstance(value, self.type)
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            ok = False
        elif self.type is int:
            ok = float(value).is_integer()
        else:
            ok = value == value  # not NaN
        if not ok:
            raise ParamError(self.name, value, self.allowed)
        value = self.type(value)
        if not self.valid(value):
            raise ParamError(self.name, value, self.allowed)
        return value


def check_params(obj: Any) -> None:
    """Validate (and coerce in place) every declared parameter of ``obj``."""
    for p in obj.params:
        setattr(obj, p.name, p.coerce(getattr(obj, p.name)))


def get_params(obj: Any) -> dict[str, Any]:
    """The declared parameters of ``obj`` and their current values."""
    return {p.name: getattr(obj, p.name) for p in obj.params}
