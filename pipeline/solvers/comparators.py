"""Comparator directions for the bounds that hold for every comparator u (docs/bounds.md section 2).

A bound of the form "for every u: M <= B(u, L_T(u))" may be minimised over any set of u chosen
without looking at the learner's run. The set here: the directions known by construction (the
generator's w*) and soft-margin SVM directions fitted to the sample on a grid of C (homogeneous:
no intercept, the learner's own hypothesis class). Each direction is summarised by the rigorous lower
bounds of its margins y_i v.x_i/||v||, which is all the bounds read.

The SVM of each C, min 1/2 ||w||^2 + C sum_i max(0, 1 - y_i w.x_i), is the objective of
:func:`pipeline.solvers.dual.sdca` with lam = 1 / (C m): dual coordinate ascent (the method of
LinearSVC's dual solver), compiled, seeded, each C started from the previous one's dual point (the box
[0, 1] is the same for every C). Small samples are solved to a certified duality gap; larger ones get a
budget of passes that shrinks with the sample's size (at least one) and no certificate
(:func:`pipeline.solvers.dual.sdca_direction`), so a large file costs a few passes over its data per C. Whatever
direction comes out is a valid
comparator: it is fixed without looking at the run, and the bounds read only its certified margins.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from pipeline.solvers.certified import margins_lower_each

C_GRID = (1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
WORK = 2e7  # larger samples: entries visited per C (passes x stored entries), at least one pass
MAX_EPOCHS = 20_000
SMALL = 2e6  # samples with at most this many stored entries: each C solved to the certified gap TOL
TOL = 1e-7  # certified duality gap of the SVM objective (per example) at which a fit stops early

log = logging.getLogger("boundlab")


def svm_directions(X: object, y: np.ndarray, c_grid: tuple[float, ...] = C_GRID) -> dict[str, np.ndarray]:
    """Soft-margin SVM directions (hinge loss, no intercept) on a grid of C, deterministic."""
    import scipy.sparse

    from pipeline.solvers.dual import sdca_direction, sdca_path

    m = int(X.shape[0])
    entries = float(X.nnz if scipy.sparse.issparse(X) else X.shape[0] * X.shape[1]) + m
    small = entries <= SMALL
    epochs = MAX_EPOCHS if small else int(max(1, math.ceil(WORK / entries)))
    out, alpha, began = {}, None, time.monotonic()
    cs = sorted(c_grid)
    # small: converged to the certified gap TOL (or MAX_EPOCHS), as a solver run to the end, each C from the last
    certs = sdca_path(X, y, [1.0 / (c * m) for c in cs], tol=TOL, max_epochs=epochs, seed=0) if small else []
    for i, c in enumerate(cs):
        if small:
            w = certs[i].w
        else:  # a fixed budget of passes, no certificate: any direction is a comparator
            w, alpha = sdca_direction(X, y, 1.0 / (c * m), epochs=epochs, seed=0, alpha0=alpha)
            log.info("comparators: SVM direction C=%g of %d x %d: %d passes, %.1f s", c, m, X.shape[1], epochs,
                     time.monotonic() - began)
        if np.any(w != 0) and np.all(np.isfinite(w)):
            out[f"svm(C={c:g})"] = w
    return {f"svm(C={c:g})": out[f"svm(C={c:g})"] for c in c_grid if f"svm(C={c:g})" in out}


def comparator_margins(X: object, y: np.ndarray, known: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """For each comparator direction: rigorous lower bounds of its normalised margins on the sample."""
    directions = {**known, **svm_directions(X, y)} if len(np.unique(y)) == 2 else dict(known)
    if not directions:
        return {}
    lower = margins_lower_each(X, y, np.stack([np.asarray(v, dtype=np.float64).ravel() for v in directions.values()]))
    return dict(zip(directions, lower))
