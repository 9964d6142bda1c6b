"""A synthetic fit's projections of its model computed in numpy (issue 34, memory): equal to
the model's marginals (its whole joint table summed down; mbi's own variable elimination in
jax), and inside a fit of either
algorithm they compile no jax kernel (AIM's scores of its candidates piled them up)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from plan.kinds.synthetic import MarginalSynthesis

#: A chain (MST's tree), 3-way cliques sharing columns (AIM's), and a model where one column
#: (f) has no potential at all (AIM's first rounds: only some columns measured together).
CLIQUES = ([("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f")],
           [("a", "b", "c"), ("c", "d"), ("b", "e"), ("f",)],
           [("b", "a"), ("d", "c", "a")])


def _model(cliques, seed: int, total: float):
    from mbi import CliqueVector, Domain, Factor, MarkovRandomField, marginal_oracles

    rng = np.random.default_rng(seed)
    domain = Domain(("a", "b", "c", "d", "e", "f"), (3, 4, 2, 5, 3, 2))
    arrays = {c: Factor(domain.project(c), 2.0 * rng.standard_normal(domain.project(c).shape))
              for c in cliques}
    potentials = CliqueVector(domain, list(cliques), arrays)
    return MarkovRandomField(potentials=potentials, total=total,
                             marginals=marginal_oracles.message_passing_stable(potentials,
                                                                               total))


def _brute_force(model, attrs):
    """The model's marginal on ``attrs`` from its whole joint table (every cell's log-potential
    the sum of its cliques', exponentiated, scaled to the model's total): no elimination."""
    names = list(model.domain.attributes)
    log = np.zeros(model.domain.shape)
    for factor in model.potentials.arrays.values():
        axes = [names.index(a) for a in factor.domain.attributes]
        values = np.transpose(np.asarray(factor.values), np.argsort(axes))
        log = log + np.expand_dims(values, [i for i in range(len(names)) if i not in axes])
    joint = np.exp(log - log.max())
    joint *= model.total / joint.sum()
    kept = [names.index(a) for a in attrs]
    summed = joint.sum(axis=tuple(i for i in range(len(names)) if i not in kept))
    return np.transpose(summed, np.argsort(np.argsort(kept)))


@pytest.mark.parametrize("seed, cliques", list(enumerate(CLIQUES)))
def test_the_numpy_projection_is_the_models_marginal_for_every_one_to_three_columns(seed,
                                                                                    cliques):
    """Every 1-, 2- and 3-column marginal (the 2- and 3-column ones in their order and
    reversed), held by the model or not: the model's domain in the asked order, and the
    values of the model's whole joint table summed down (720 cells), within float rounding."""
    from release.synthesis import numpy_projection

    model = _model(cliques, seed, total=1234.0)
    names = model.domain.attributes
    chosen = [c for k in (1, 2, 3) for c in itertools.combinations(names, k)]
    for attrs in chosen + [c[::-1] for c in chosen if len(c) > 1]:
        got = numpy_projection(model, attrs)
        assert got.domain == model.domain.project(attrs)
        assert isinstance(got.values, np.ndarray)
        np.testing.assert_allclose(got.values, _brute_force(model, attrs), rtol=1e-10,
                                   atol=0, err_msg=str(attrs))


@pytest.mark.slow   # jax compiles mbi's message passing for the model
@pytest.mark.parametrize("algorithm", ["AIM", "MST"])
def test_inside_a_fit_projections_compile_no_jax_kernel(algorithm):
    """Inside a fit (``lean_fit``, as ``SynthesisMeasurement.fit`` runs one) projecting the
    model onto marginals it does not hold adds no kernel to jax's per-operation cache. On main
    AIM's fits projected with mbi's jax (each candidate's variable elimination compiled its
    operations' kernels: AIM on Adult's 8 columns grew to 3.7 GB), and MST's dropped them
    only once the process had grown 256 MB, which a small model's never do."""
    import jax
    from jax._src.dispatch import xla_primitive_callable
    from mbi import marginal_oracles

    import release.synthesis
    from release.synthesis import lean_fit, lean_projections

    lean_projections()   # as a release's measurement is built (release.synthesis._algorithm)
    model = _model(CLIQUES[0], 3, total=50.0)
    spec = MarginalSynthesis(algorithm, "auto", (3, 4, 2, 5, 3, 2), "zcdp", 1.0, 1, 10, 50)
    jax.clear_caches()   # no kernel left by an earlier test of the same shapes
    with lean_fit(spec):
        pairs = {p: np.asarray(model.project(p).values) for p in
                 [("a", "c"), ("f", "a"), ("b", "d", "f"), ("e", "b")]}
        assert xla_primitive_callable.cache_info().currsize == 0
    assert not release.synthesis._NUMPY.get()   # only inside the fit
    for attrs, values in pairs.items():   # and they are the model's: mbi's own elimination
        expected = marginal_oracles.variable_elimination(model.potentials, attrs, model.total)
        np.testing.assert_allclose(values, np.asarray(expected.values), rtol=1e-12)
