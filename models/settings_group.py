"""Settings grouped in one spec argument (the Bayesian models' ``sampling=Sampling(...)``, the
tree synthesizers' ``trees=TreeOptions(...)``), held flat by saved folders, releases and the
command line."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from bayes_risk._constraints import InstanceOf, check_params
from bayes_risk._rng import seed_to_json
from bayes_risk._sampling_spec import Sampling
from bayes_risk._specs import fold_fields, is_default, with_defaults
from bayes_risk._tree_spec import TreeOptions
from bayes_risk.models.base import BaseSynthesizer

__all__ = ["SAMPLING", "TREES", "GroupedSettingsSynthesizer", "SettingsGroup"]


@dataclass(frozen=True)
class SettingsGroup:
    """One grouped argument: its name, spec class, the class attribute holding a model's
    defaults, how a refusal names its owner (``{}``: the class's name) and its fields, and
    whether the fields are also taken flat by the constructor and ``set_params``."""

    name: str
    spec: type
    defaults: str
    owner: str
    kind: str
    example: str
    flat: bool


SAMPLING = SettingsGroup("sampling", Sampling, "sampling_defaults", "{}'s sampler",
                         "sampling settings", "sampling=Sampling(draws=1000)", flat=False)
TREES = SettingsGroup("trees", TreeOptions, "tree_defaults", "{}", "tree options",
                      "trees=TreeOptions(min_leaf=10)", flat=True)

#: the constraint table of the groups' arguments (read by ``_resolved_group``)
_SETTINGS = {g.name: [InstanceOf(g.spec, f"a bayes_risk.models.{g.spec.__name__} (e.g. "
                                         f"{g.example})"), None] for g in (SAMPLING, TREES)}


class GroupedSettingsSynthesizer(BaseSynthesizer):
    """A synthesizer with settings grouped in one spec argument (``settings_group``), read and
    written flat; a subclass without the argument in its ``__init__`` has plain settings."""

    settings_group: ClassVar[SettingsGroup]
    #: the flat settings in the order saved folders and releases hold them (default:
    #: ``__init__``'s, the group's fields in place of its argument)
    settings_order: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _group_defaults(cls) -> Mapping[str, Any]:
        return getattr(cls, cls.settings_group.defaults)

    def _resolved_group(self) -> Any:
        """The group's spec with its fields left at ``None`` set to the model's defaults; a
        ``ValidationError`` for another type or a field the model does not take
        (``OPTION_CONFLICT``)."""
        g = self.settings_group
        value = check_params({g.name: getattr(self, g.name, None)},
                             {g.name: _SETTINGS[g.name]})[g.name]
        return with_defaults(g.spec() if value is None else value, self._group_defaults(),
                             g.owner.format(type(self).__name__), g.kind)

    @classmethod
    def setting_names(cls) -> list[str]:
        """The names of the settings :meth:`from_settings` takes and a saved model holds:
        ``__init__``'s, the group's fields (the model's defaults) in place of the group.

        Returns
        -------
        list of str
        """
        if cls.settings_order:
            return list(cls.settings_order)
        names = cls._param_names()
        if cls.settings_group.name not in names:
            return names
        at = names.index(cls.settings_group.name)
        return names[:at] + list(cls._group_defaults()) + names[at + 1:]

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> GroupedSettingsSynthesizer:
        """A new model from flat settings, the group's fields among them (a saved model's
        ``model.json``, a release's manifest, the command line's options).

        Parameters
        ----------
        settings : mapping
            ``__init__`` arguments, with the group's fields (``draws=...``, ``min_leaf=5``)
            given flat or grouped (``sampling``, ``trees``).

        Returns
        -------
        GroupedSettingsSynthesizer

        Raises
        ------
        ValidationError
            A setting the model does not take, naming the valid ones (``INVALID_ARGUMENT``).
        """
        defaults = cls._group_defaults()
        # a saved model holds every field, the defaults too: those are left to the defaults
        # again, so that the model read back has the settings as given
        given = {k: v for k, v in settings.items()
                 if not (k in defaults and is_default(v, defaults[k]))}
        return super().from_settings(fold_fields(given, cls.settings_group.spec,
                                                 cls.settings_group.name, tuple(defaults)))

    def set_params(self, **params: Any) -> GroupedSettingsSynthesizer:
        """``BaseSynthesizer.set_params``; ``<group>__<field>=...`` (scikit-learn's nested
        names, ``sampling__draws=200``) also when the group is ``None``, and, where the group's
        fields are taken flat (the tree options), a field by its name (``min_leaf=3``).

        Returns
        -------
        self
        """
        g = self.settings_group
        flat = ({k: params.pop(k) for k in list(params) if k in self._group_defaults()}
                if g.flat else {})
        if flat or any(k.startswith(f"{g.name}__") for k in params):
            base = params.pop(g.name, getattr(self, g.name, None)) or g.spec()
            params[g.name] = dataclasses.replace(base, **flat)
        super().set_params(**params)
        return self

    def flat_settings(self) -> dict[str, Any]:
        """The settings as saved folders and releases hold them: :meth:`get_params`
        (``deep=False``) with the group's resolved fields in place of the group, in the order
        of :meth:`setting_names`.

        Returns
        -------
        dict
        """
        params = self.get_params(deep=False)
        if self.settings_group.name in params:
            del params[self.settings_group.name]
            params.update(dataclasses.asdict(self._resolved_group()))
        return {k: params[k] for k in self.setting_names()}

    def release_settings(self) -> dict[str, Any]:
        # flat, as saved models and releases have always held them (their identity hashes them)
        params = self.flat_settings()
        if "random_seed" in params:
            params["random_seed"] = seed_to_json(params["random_seed"])
        return params
