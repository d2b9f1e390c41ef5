"""Parameter specifications: each learner and dataset declares its parameters as data.

The same specs validate a Python constructor call and a Hydra config, so a bad value fails before any
work with one line naming the parameter, the value and what is allowed.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
from dataclasses import dataclass, replace
from typing import Any, Callable, ClassVar, Optional

# Where float64 stops representing the statistics the bounds are computed from (the one place this is
# decided). A data radius (rho, R, a kernel bandwidth) lies in [1/SCALE, SCALE]: its square, the
# products of entries and (R/gamma)^2 are then finite, normal doubles (no underflow to 0, no overflow).
SCALE = 1e100
SCALE_WORDS = "a number in [1e-100, 1e100] (squares and products of the data must stay finite, normal doubles)"
MAX_STEPS = 10**8  # per-step arrays (indices, losses) of T entries are held in memory: 10^8 int64 = 800 MB
STEPS_WORDS = f"an integer in [1, {MAX_STEPS:.0e}] (steps; per-step arrays of T entries are held in memory)"
STATE_LIMIT = 2.0**500  # a learner's running quantity below this has a finite square (< 2^1000)


def in_scale(v: float) -> bool:
    """True when ``v`` is a usable data scale: 1/SCALE <= v <= SCALE."""
    return 1.0 / SCALE <= v <= SCALE


def reciprocal_finite(v: float) -> bool:
    """True for a finite v > 0 whose reciprocal 1/v is finite too (v a normal double: v >= 2.2e-308)."""
    return sys.float_info.min <= v <= sys.float_info.max


POSITIVE_WORDS = "a finite number >= 2.2e-308 (the smallest normal double: 1/lam must be finite)"


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


class _Required:
    """The default of a parameter that has none: the caller must give it."""

    _instance: _Required | None = None

    def __new__(cls) -> _Required:  # one object, so ``default is REQUIRED`` holds after a pickle round trip too
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REQUIRED"

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (_Required, ())


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Rule:
    """A validity rule that says itself: the predicate and the allowed values in words, declared once and
    shared by every parameter that obeys it (the role of scikit-learn's ``_parameter_constraints``).
    :meth:`because` adds the reason a declaration narrows or explains it, in the one format the messages use.

    >>> STEPS.words == STEPS_WORDS, at_least(2).because("the pinned pair").words
    (True, 'an integer >= 2 (the pinned pair)')
    >>> POSITIVE.check("lam", 0.0)
    Traceback (most recent call last):
    ...
    pipeline.params.ParamError: lam=0.0: must be a finite number >= 2.2e-308 (the smallest normal double: 1/lam must be finite)
    """

    test: Callable[[Any], bool]
    words: str

    def __call__(self, value: Any) -> bool:
        return bool(self.test(value))

    def because(self, why: str) -> Rule:
        """The same rule, its words followed by ``(why)``."""
        return Rule(self.test, f"{self.words} ({why})")

    def check(self, name: str, value: Any) -> None:
        """Raise :class:`ParamError` naming ``name`` unless ``value`` obeys the rule (for code that takes the
        parameter as an argument, e.g. a solver called from Python, rather than as a declared attribute)."""
        if not self(value):
            raise ParamError(name, value, self.words)


def at_least(low: int, kind: str = "an integer") -> Rule:
    """``value >= low``."""
    return Rule(lambda v: v >= low, f"{kind} >= {low}")


def above(low: float, kind: str = "a number") -> Rule:
    """``value > low``."""
    return Rule(lambda v: v > low, f"{kind} > {low:g}")


def one_of(*values: str) -> Rule:
    """``value`` is one of ``values``."""
    return Rule(lambda v: v in values, f"one of {', '.join(values)}")


POSITIVE = Rule(reciprocal_finite, POSITIVE_WORDS)  # a step size's lam: 1/lam is finite
STEPS = Rule(lambda v: 1 <= v <= MAX_STEPS, STEPS_WORDS)
IN_SCALE = Rule(in_scale, SCALE_WORDS)
PROBABILITY = Rule(lambda v: 0 < v < 1, "a probability in (0, 1)")
NOISE = Rule(lambda v: 0 <= v < 0.5, "a probability in [0, 0.5)")  # a label-flip rate below 1/2
ANY = Rule(lambda v: True, "true or false")  # a switch


@dataclass(frozen=True)
class Param:
    """One parameter: its name, type (int, float, str or bool), validity rule (a :class:`Rule`, or a predicate
    with the allowed values in words) and default (:data:`REQUIRED` when the caller must give it). The
    declaration is the single source of the constructor's keyword, its default, the config key and its
    validation (:class:`Declared`). :meth:`but` restates a shared declaration with another default.

    >>> Param("passes", int, at_least(1), default=1).allowed
    'an integer >= 1'
    """

    name: str
    type: type
    valid: Callable[[Any], bool]
    allowed: str = ""
    nullable: bool = False
    default: Any = REQUIRED
    # what an instance holds when :meth:`coerce` returns another type than ``type``, as an annotation reads
    held: ClassVar[str] = ""

    @property
    def annotation(self) -> str:
        """The type an instance holds, as the class's annotation of the parameter reads (a learner annotates
        every parameter it declares, for a type checker: tests/test_types.py checks that they agree)."""
        return self.held or self.type.__name__ + (" | None" if self.nullable else "")

    def __post_init__(self) -> None:
        if isinstance(self.valid, Rule) and not self.allowed:
            object.__setattr__(self, "allowed", self.valid.words)
        if not self.allowed:
            raise TypeError(f"Param({self.name!r}): say the allowed values (a Rule, or the words after the predicate)")

    def but(self, **changes: Any) -> Param:
        """This declaration with some fields changed (e.g. another ``default``)."""
        return replace(self, **changes)

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


# The parameters several learners declare, declared once (docs/bounds.md section 4: lam, T, delta of the
# Pegasos family); a learner restates one with :meth:`Param.but` when its default differs.
LAM = Param("lam", float, POSITIVE)
T_STEPS = Param("T", int, STEPS, default=10_000)
DELTA = Param("delta", float, PROBABILITY, default=0.05)
PROJECTION = Param("projection", bool, ANY, default=False)
INTERCEPT = Param("intercept", bool, ANY, default=False)
BATCH = Param("batch", int, at_least(1).because("and at most the sample size"), default=1)
RHO = Param("rho", float, IN_SCALE)


def check_params(obj: Any) -> None:
    """Validate (and coerce in place) every declared parameter of ``obj``."""
    for p in obj.params:
        setattr(obj, p.name, p.coerce(getattr(obj, p.name)))


def get_params(obj: Any) -> dict[str, Any]:
    """The declared parameters of ``obj`` and their current values."""
    return {p.name: getattr(obj, p.name) for p in obj.params}


def param_defaults(cls: type) -> dict[str, Any]:
    """Each declared parameter of ``cls`` and its default (:data:`REQUIRED` if it has none): the declared one,
    else, for a class whose own ``__init__`` declares it (a plug-in written before ``Param.default``), the
    constructor's keyword default."""
    signature = inspect.signature(cls.__init__).parameters
    out = {}
    for p in cls.params:
        default = p.default
        if default is REQUIRED and p.name in signature and signature[p.name].default is not inspect.Parameter.empty:
            default = signature[p.name].default
        out[p.name] = default
    return out


def _signature(params: tuple[Param, ...]) -> inspect.Signature:
    """``(self, *, name: type = default, ...)`` in declaration order: what ``help()``, :func:`inspect.signature`
    and scikit-learn's introspection (``get_params``, ``clone``) read."""
    keywords = [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY,
                                  default=inspect.Parameter.empty if p.default is REQUIRED else p.default,
                                  annotation=Optional[p.type] if p.nullable else p.type) for p in params]
    return inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *keywords])


def _store(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Bind the arguments to the parameters ``type(obj)`` declares and store each as an attribute (its
    declared default when not given). Against the object's own class, so that a subclass's hand-written
    ``__init__`` can call ``super().__init__(**params)``."""
    params = type(obj).params
    if not args and all(p.name in kwargs or p.default is not REQUIRED for p in params) \
            and len(kwargs) == sum(p.name in kwargs for p in params):
        # keywords only, each a declared one, every required one given: what binding would store, without
        # building the signature (learners are made in the worst-case searches' inner loops)
        for p in params:
            setattr(obj, p.name, kwargs.get(p.name, p.default))
        return
    try:
        bound = _signature(params).bind(obj, *args, **kwargs)
    except TypeError as e:  # an unknown keyword, a missing one, a positional argument
        raise TypeError(f"{type(obj).__name__}(): {e}") from None
    for p in params:
        setattr(obj, p.name, bound.arguments.get(p.name, p.default))


def _generated_init(cls: type) -> Callable[..., None]:
    params = cls.params

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - becomes the class's __init__
        _store(self, args, kwargs)

    __init__.__signature__ = _signature(params)  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    __init__.__doc__ = f"Store the declared parameters ({', '.join(p.name for p in params) or 'none'}); nothing else."
    __init__.generated = True  # type: ignore[attr-defined]
    return __init__


class Declared:
    """Base of the classes configured by declared parameters (learners, datasets): ``params``, a tuple of
    :class:`Param`, is the single source of the constructor, the stored attributes and :meth:`get_params`.

    A subclass gets a keyword-only ``__init__`` that only stores each declared parameter as an attribute of
    the same name (its declared default when not given), with a real signature, unless it defines its own
    ``__init__`` (one that does more calls ``super().__init__(**params)``). :meth:`check` validates the values.

    >>> class Step(Declared):
    ...     params = (Param("passes", int, lambda v: v >= 1, "an integer >= 1", default=1),
    ...               Param("eta", float, lambda v: v > 0, "a number > 0"))
    >>> import inspect; inspect.signature(Step)
    <Signature (*, passes: int = 1, eta: float)>
    >>> Step(eta=0.5).get_params()
    {'passes': 1, 'eta': 0.5}
    >>> Step(eta=0.0).check()
    Traceback (most recent call last):
    ...
    pipeline.params.ParamError: eta=0.0: must be a number > 0
    """

    params: ClassVar[tuple[Param, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__ and getattr(cls.__init__, "generated", False):
            cls.__init__ = _generated_init(cls)  # type: ignore[method-assign]
            return
        # a hand-written constructor: the defaults it and the declarations both state must agree
        signature = inspect.signature(cls.__init__).parameters
        for p in cls.params:
            if p.default is REQUIRED or p.name not in signature:
                continue
            own = signature[p.name].default
            if own is not inspect.Parameter.empty and own != p.default:
                raise TypeError(f"{cls.__qualname__}: parameter {p.name!r} is declared with default {p.default!r} "
                                f"and {cls.__qualname__}.__init__ has {own!r}; declare it once (Param(..., default=...))")

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # each subclass gets one with its own signature
        _store(self, args, kwargs)

    __init__.generated = True  # type: ignore[attr-defined]

    def get_params(self) -> dict[str, Any]:
        """The declared parameters and their current values (the config keys, the run's columns)."""
        return get_params(self)

    def check(self) -> None:
        """Raise :class:`ParamError` on an invalid parameter (coercing the valid ones to their type)."""
        check_params(self)


def check_margin_scale(gamma: float, rho: float) -> None:
    """Refuse a margin so far below the radius that (rho/gamma)^2, the Perceptron's bound, overflows."""
    if rho / gamma > SCALE:
        raise ParamError("gamma", gamma, f">= rho / 1e100 = {rho / SCALE:.3g} ((rho/gamma)^2, Novikoff's bound, must be a "
                         "finite double)")


# --- Memory: sizes checked before anything is allocated ---------------------------------------------

GIB = float(2**30)
FLOAT_BYTES = 8  # float64, int64


def available_memory() -> float:
    """Bytes of memory available to a new allocation: MemAvailable of /proc/meminfo, else the free (then
    total) physical pages (os.sysconf); infinite when the system says neither (nothing is refused)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    for pages in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        try:
            count, size = os.sysconf(pages), os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            continue
        if count > 0 and size > 0:
            return float(count) * float(size)
    return math.inf


SMALL_REQUEST = float(2**20)  # bytes never refused: less than the interpreter's own allocations ever need


def memory_shortfall(nbytes: float, what: str = "the data") -> str | None:
    """None when ``nbytes`` fit in the available memory; else the words saying they do not. A request below
    ``SMALL_REQUEST`` fits without asking (reading /proc/meminfo costs ~25 us: a seed round's run, a few ms,
    checks its data once)."""
    if nbytes < SMALL_REQUEST:
        return None
    available = available_memory()
    if not nbytes > available:
        return None
    return f"{what} need ~{nbytes / GIB:.3g} GiB, more than the {available / GIB:.3g} GiB of memory available"


def check_memory(param: str, value: Any, nbytes: float, hint: str, what: str = "the data") -> None:
    """Refuse a size parameter whose arrays (an upper-ish estimate ``nbytes`` of the dominant ones, float64
    8 bytes each, counting the copies the code makes) exceed the available memory: one line naming ``param``
    with the estimate, raised before anything is allocated. ``hint`` says what to lower."""
    shortfall = memory_shortfall(nbytes, what)
    if shortfall is not None:
        raise ParamError(param, value, f"smaller: {shortfall}; {hint}")


def check_sizes(terms: dict[str, tuple[Any, float]], hint: str, what: str = "the data") -> None:
    """:func:`check_memory` on the sum of several terms ``{param: (value, bytes)}``, naming the parameter
    with the largest term."""
    total = math.fsum(float(b) for _, b in terms.values())
    name = max(terms, key=lambda k: terms[k][1])
    check_memory(name, terms[name][0], total, hint, what)
