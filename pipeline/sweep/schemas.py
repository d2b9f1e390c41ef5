"""Config schemas generated from the code: every learner's and dataset's parameters with their code
defaults, registered in Hydra's ConfigStore as ``schema/GROUP/NAME``.

A group's YAML option extends its schema, so ``algorithm.passes=3`` is a plain override, ``--help``
shows every parameter with its default, and YAML holds only what differs from the code.

Plug-ins (:mod:`pipeline.plugins`) get the same ``schema/GROUP/NAME`` node and, when ``conf/GROUP`` has no
``NAME.yaml``, a ``GROUP/NAME`` option too (``algorithm=NAME`` then works with no YAML): the schema with
each parameter that shares its name with a top-level sweep key (``n``, ``d``, ``gamma``, ``lam``, ``T``, ...)
interpolating it, as the built-ins' YAML files do. A plug-in's nodes are *lazy*: its class is imported
only when Hydra loads the node (the command selects it), never by ``--help`` or by another command.
"""

from __future__ import annotations

from typing import Any

from hydra.core.config_store import ConfigNode
from omegaconf import MISSING


def node(cls: type) -> dict[str, object]:
    """``name`` plus each declared parameter with its declared default (``???`` if required;
    :func:`pipeline.params.param_defaults`)."""
    from pipeline.params import REQUIRED, param_defaults

    return {"name": cls.name, **{k: MISSING if v is REQUIRED else v for k, v in param_defaults(cls).items()}}


def shared_keys() -> tuple[str, ...]:
    """The top-level scalar keys of conf/config.yaml that the groups interpolate (gamma, rho, lam, T, n, ...)."""
    from omegaconf import OmegaConf

    from pipeline.paths import CONF_DIR

    top = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"), resolve=False)
    skip = {"name", "question", "seed", "force", "defaults"}
    return tuple(k for k, v in top.items() if k not in skip and isinstance(v, (int, float)) and not isinstance(v, bool))


def option_node(group: str, name: str) -> dict[str, object]:
    """A plug-in's ``GROUP/NAME`` option: its schema, with the parameters named like a top-level key
    interpolating it (``n: ${n}``), or ``{name}`` alone when the plug-in cannot be imported (the job's
    build then reports why, in one line)."""
    from pipeline import plugins

    registry = plugins.LEARNERS if group == "algorithm" else plugins.DATASETS
    try:
        cls = registry[name]
    except plugins.PluginError:
        return {"name": name}
    shared = set(shared_keys())
    return {k: (f"${{{k}}}" if k in shared else v) for k, v in node(cls).items()}


def schema_node(group: str, name: str) -> dict[str, object]:
    from pipeline import plugins

    registry = plugins.LEARNERS if group == "algorithm" else plugins.DATASETS
    try:
        return node(registry[name])
    except plugins.PluginError:
        return {"name": name}


class LazyConfigNode(ConfigNode):
    """A ConfigStore entry whose node is built on first load (Hydra reads ``.node`` only then): listing
    a group's options (``--help``) imports nothing. Picklable (launchers ship the store to workers)."""

    def __init__(self, name: str, group: str, make: str, option: tuple[str, str]) -> None:
        self.name, self.group, self.package, self.provider = name, group, None, "boundlab.plugins"
        self._make, self._option, self._node = make, option, None

    @property  # type: ignore[override]
    def node(self) -> Any:
        if self._node is None:
            from omegaconf import OmegaConf

            self._node = OmegaConf.create(MAKERS[self._make](*self._option))
        return self._node

    @node.setter
    def node(self, value: Any) -> None:
        self._node = value


MAKERS = {"schema_node": schema_node, "option_node": option_node}


def _store_lazy(cs: Any, group: str, name: str, make: str, option: tuple[str, str]) -> None:
    cur = cs.repo
    for part in group.split("/"):
        cur = cur.setdefault(part, {})
    file = f"{name}.yaml"
    if not isinstance(cur.get(file), LazyConfigNode):  # idempotent: a node already built stays built
        cur[file] = LazyConfigNode(file, group, make, option)


_STORED: dict[tuple[str, str], tuple[str, Any]] = {}  # (group, name) -> (repr of the node, the ConfigNode stored)


def _store_once(cs: Any, group: str, name: str, value: dict[str, object]) -> None:
    """``cs.store(group=group, name=name, node=value)``, unless the store still holds the entry this process stored for
    the same node: making the structured nodes is most of a :func:`register` (6.2 ms against 0.2 ms for the
    built-ins' schemas), and every pre-flight check registers them. The node is compared by ``repr`` (a default's
    type and the sign of a zero count), the entry by identity (a store that was reset, or an entry replaced since,
    is stored again)."""
    key, shown = (group, name), repr(value)
    previous = _STORED.get(key)
    if previous is not None and previous[0] == shown and previous[1] is _entry(cs, group, name):
        return
    cs.store(group=group, name=name, node=value)
    _STORED[key] = (shown, _entry(cs, group, name))


def _entry(cs: Any, group: str, name: str) -> Any:
    """The store's entry for ``group/name`` (None if it has none)."""
    entry = cs.repo
    for part in (*group.split("/"), f"{name}.yaml"):
        entry = entry.get(part) if isinstance(entry, dict) else None
    return entry


def register() -> None:
    """Store the schemas (idempotent)."""
    from hydra.core.config_store import ConfigStore

    from pipeline import plugins
    from pipeline.paths import CONF_DIR

    cs = ConfigStore.instance()
    for group, registry in (("algorithm", plugins.LEARNERS), ("dataset", plugins.DATASETS)):
        for name in list(registry):
            if registry.is_builtin(name) or registry.entry(name) is None:  # built-ins (and in-process classes)
                try:
                    _store_once(cs, f"schema/{group}", name, node(registry[name]))
                except plugins.PluginError as e:  # a built-in that does not import: its selection says why
                    plugins.warn(str(e))
                continue
            _store_lazy(cs, f"schema/{group}", name, "schema_node", (group, name))
            if not (CONF_DIR / group / f"{name}.yaml").exists():
                _store_lazy(cs, group, name, "option_node", (group, name))
