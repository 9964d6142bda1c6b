"""Every public name of dpcore has a property test: the meta-test over all property files.

The names are enumerated from each module's ``__all__`` (subpackages included), named by the
module that defines them ("mechanisms.laplace.Laplace.sample"); the property files declare
what they exercise with ``@covers``. All of them are imported here first, so this test gives
the same answer run alone or with the others.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import dpcore
from tests.dpcore.properties.oracle import COVERED


def _import_property_files() -> None:
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if path.stem != "test_public_api":
            importlib.import_module(f"{__package__}.{path.stem}")


def _method_like(value: object) -> bool:
    return (inspect.isfunction(value) or isinstance(value, property | classmethod | staticmethod))


def public_api() -> set[str]:
    """Every public function and class of every dpcore module (and subpackage module), and
    every public method, property, class or static method those classes define (inherited
    ones too, when a dpcore class defines them), named after the module defining them."""
    found: set[str] = set()
    for info in pkgutil.walk_packages(dpcore.__path__, prefix="dpcore."):
        module = importlib.import_module(info.name)
        exported = getattr(module, "__all__", None)
        if exported is None:  # dpcore.checks: its public callables
            exported = [n for n, v in vars(module).items()
                        if not n.startswith("_") and (inspect.isfunction(v) or inspect.isclass(v))
                        and v.__module__ == module.__name__]
        for name in exported:
            value = getattr(module, name)
            if not (inspect.isfunction(value) or inspect.isclass(value)):
                continue  # constants and type aliases
            home = value.__module__.removeprefix("dpcore.")  # re-exports count once
            found.add(f"{home}.{name}")
            if inspect.isclass(value):
                for attr in dir(value):
                    if attr.startswith("_"):
                        continue
                    owner = next(c for c in value.__mro__ if attr in vars(c))
                    if owner.__module__.startswith("dpcore") and _method_like(vars(owner)[attr]):
                        found.add(f"{home}.{name}.{attr}")
    return found


def test_every_public_name_of_dpcore_has_a_property_test():
    _import_property_files()
    api = public_api()
    assert len(api) > 150  # the enumeration itself works (functions, classes and methods)
    assert "mechanisms.laplace.Laplace.sweep" in api  # class methods and subpackages too
    missing = sorted(api - COVERED)
    assert not missing, f"public dpcore names without a property test: {missing}"
    stale = sorted(COVERED - api)
    assert not stale, f"covered names that are not public dpcore API: {stale}"
