"""No code asks a part's mechanism which type it is: the type answers (issue 36, item 2).

A part of a plan query (``plan.parts.Part``) holds one of four mechanism types: a catalogue
mechanism (``dpcore.mechanisms.AdditiveMechanism``), report noisy max and partition
selection's threshold (``plan.parts``), a synthetic table (``plan.kinds.synthetic``). Each
states its losses, its name, its answer range, how it is simulated
(``plan.parts.PartMechanism``), and has a certifier registered by type
(``release.measurements.CERTIFIERS``). An ``isinstance`` over those types outside the module
that defines them is a branch the next type would fall through, so there are none.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

import numpy as np
import pytest

from tests.conftest import ROOT

#: Each part mechanism type and the files where it may be tested by type (its own module).
OWN = {
    "AdditiveMechanism": ("dpcore/mechanisms/",),
    "NoisyMax": ("plan/parts.py",),
    "PartitionThreshold": ("plan/parts.py",),
    "MarginalSynthesis": ("plan/kinds/synthetic.py",),
}
#: The production code (tests may assert a type).
FOLDERS = ("app_pages", "bench", "dashboard", "dpcore", "engine", "plan", "release")


def _names_in(node: ast.AST) -> set[str]:
    """The names a type expression mentions (``A``, ``mod.A``, ``(A, B)``, ``A | B``)."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def type_tests_in(source: str) -> list[tuple[int, str]]:
    """(line, type) of each test of a value against a part mechanism type in ``source``:
    ``isinstance``/``issubclass`` calls, ``type(x) is T`` (or ``==``) and ``case T()``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        tested: set[str] = set()
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
            tested = _names_in(node.args[1])
        elif isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Call) and isinstance(side.func, ast.Name)
                and side.func.id == "type" for side in (node.left, *node.comparators)):
            tested = set().union(*(_names_in(c) for c in (node.left, *node.comparators)
                                   if not isinstance(c, ast.Call)))
        elif isinstance(node, ast.MatchClass):
            tested = _names_in(node.cls)
        found += [(node.lineno, name) for name in sorted(tested & set(OWN))]
    return found


def test_the_checker_finds_a_type_test():
    assert type_tests_in("if isinstance(m, NoisyMax): pass") == [(1, "NoisyMax")]
    assert type_tests_in("isinstance(p.mechanism, parts.PartitionThreshold)") == [
        (1, "PartitionThreshold")]
    assert type_tests_in("ok = isinstance(m, AdditiveMechanism | MarginalSynthesis)") == [
        (1, "AdditiveMechanism"), (1, "MarginalSynthesis")]
    assert type_tests_in("isinstance(m, (int, NoisyMax))") == [(1, "NoisyMax")]
    assert type_tests_in("x = type(m) is PartitionThreshold") == [(1, "PartitionThreshold")]
    assert type_tests_in("match m:\n    case NoisyMax(k=1):\n        pass") == [(2, "NoisyMax")]
    # types that are not a part's mechanism, and a registry keyed by type, are no type test
    assert type_tests_in("isinstance(q.mechanism, model.SelectionNoise)") == []
    assert type_tests_in("CERTIFIERS = {NoisyMax: certify_noisy_max}") == []


def test_no_code_tests_a_part_mechanism_type_outside_its_module():
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            found += [(name, line, kind) for line, kind in type_tests_in(path.read_text())
                      if not name.startswith(OWN[kind])]
    assert found == [], found


# --------------------------------------------------------------------------------------------
# every type answers, and a new type is one registration


def _parts():
    from plan.build import build_plan
    from plan.kinds.synthetic import MarginalSynthesis
    from tests.release_fixtures import every_kind_plan

    parts = [part for built in build_plan(every_kind_plan()) for part in built.parts]
    types = {type(part.mechanism).__name__ for part in parts}
    assert {"NoisyMax", "PartitionThreshold", "Laplace"} <= types   # the plan holds them
    synthesis = MarginalSynthesis("MST", "one-way", (3, 4), "pure", 1.0, 1, 100, 300)
    return parts, synthesis


def test_every_part_type_answers_what_the_pages_and_the_release_ask():
    from plan.parts import Part
    from release.measurements import certifier_of

    parts, synthesis = _parts()
    parts.append(Part("synthetic table", synthesis, 1.0, None, integer=True))
    for part in parts:
        mechanism = part.mechanism
        assert isinstance(mechanism.name, str) and mechanism.name, part.name
        assert isinstance(mechanism.integer_input, bool)
        assert mechanism.answer_range is None or len(mechanism.answer_range) == 2
        assert callable(mechanism.simulate)
        assert certifier_of(part) is not None, type(mechanism).__name__
    with pytest.raises(TypeError, match="no simulation"):
        synthesis.simulate([1, 2], scale=1.0, rng=np.random.default_rng(0))


def test_the_accountants_read_a_part_by_what_it_states():
    """The page's road (``planned_losses``) is the mechanism's own: a threshold's noise and δ
    as ``partition_losses`` gives them, a noisy max's guarantee, a Laplace's noise law."""
    from dpcore.accounting import NoiseLoss, ThresholdLoss, partition_losses
    from release.measurements import planned_losses

    parts, _ = _parts()
    seen = set()
    for part in parts:
        m = part.mechanism
        got = planned_losses(part)
        kind = type(m).__name__
        seen.add(kind)
        if kind == "PartitionThreshold":
            assert got == partition_losses(noise=m.noise, scale=m.scale,
                                           threshold=m.threshold, max_rows=m.max_rows,
                                           max_groups=m.max_groups)
            assert isinstance(got[1], ThresholdLoss)
        elif kind == "NoisyMax":
            assert got == (m.privacy,)
        elif kind == "Laplace":
            # b = Δ/ε: the law of the noise the plan draws, at the part's sensitivity
            assert got == (NoiseLoss("laplace", m.scale, part.sensitivity),)
    assert {"PartitionThreshold", "NoisyMax", "Laplace"} <= seen


@dataclass(frozen=True)
class _Planted:
    """A new part type: it states its losses and registers its certifier, nothing else."""

    scale: float = 2.0
    name = "Planted"
    answer_range = None
    integer_input = False

    def losses(self):
        from dpcore.measures import PureDP

        return (PureDP(0.25),)

    def simulate(self, value, *, scale, rng):
        return value


def test_a_new_part_type_is_one_registration(monkeypatch):
    """Certified, described in the ledger's words and accounted without editing ``certify``,
    ``release.run`` or the accountants; refused while it has no certifier."""
    from dpcore.accounting import privacy_losses
    from dpcore.measures import PureDP
    from plan.build import build
    from plan.model import Noise, PlanQuery, PrivacyUnit
    from plan.parts import Loss, Part
    from release import measurements
    from release.errors import Unsupported
    from release.run import _describe
    from tests.release_fixtures import every_kind_plan

    query = next(q for q in every_kind_plan().queries if isinstance(q.mechanism, Noise))
    built = build(PlanQuery(query.id, query.label, query.query, query.mechanism),
                  PrivacyUnit())
    part = Part("planted", _Planted(), 1.0, Loss(epsilon=0.25))
    planted = replace(built, parts=(part,))
    with pytest.raises(Unsupported, match="no OpenDP measurement for the part 'planted'"):
        measurements.certify(planted)

    def certify_planted(built, part):
        return measurements.Certified(part, None, 1, part.loss, part.loss, 2.0, False,
                                      described="planted noise", opendp="make_planted")

    monkeypatch.setitem(measurements.CERTIFIERS, _Planted,
                        measurements.Certifier(certify_planted))
    [certified] = measurements.certify(planted)
    described = _describe(certified)
    assert (described["mechanism"], described["opendp"]) == ("planted noise", "make_planted")
    assert measurements.planned_losses(part) == (PureDP(0.25),)
    assert privacy_losses([part.mechanism]) == (PureDP(0.25),)
