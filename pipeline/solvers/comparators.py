"""Comparator directions for the bounds that hold for every comparator u (docs/bounds.md section 2).

A bound of the form "for every u: M <= B(u, L_T(u))" may be minimised over any set of u chosen
without looking at the learner's run. The set here: the directions known by construction (the
generator's w*) and soft-margin SVM directions fitted to the sample on a grid of C (homogeneous:
no intercept, the learner's own hypothesis class). Each direction is summarised by the rigorous lower
bounds of its margins y_i v.x_i/||v||, which is all the bounds read.
"""

from __future__ import annotations

import warnings

import numpy as np

from pipeline.data.certify import margins_lower

C_GRID = (1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)


def svm_directions(X: object, y: np.ndarray, c_grid: tuple[float, ...] = C_GRID) -> dict[str, np.ndarray]:
    """Soft-margin SVM directions (hinge loss, no intercept) on a grid of C, deterministic."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    out = {}
    for c in c_grid:
        with warnings.catch_warnings():  # any direction is a valid comparator, converged or not
            warnings.simplefilter("ignore", ConvergenceWarning)
            svm = LinearSVC(C=c, loss="hinge", fit_intercept=False, dual=True, max_iter=20_000, random_state=0)
            w = svm.fit(X, y).coef_.ravel()
        if np.any(w != 0):
            out[f"svm(C={c:g})"] = w
    return out


def comparator_margins(X: object, y: np.ndarray, known: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """For each comparator direction: rigorous lower bounds of its normalised margins on the sample."""
    directions = {**known, **svm_directions(X, y)} if len(np.unique(y)) == 2 else dict(known)
    return {name: margins_lower(X, y, v) for name, v in directions.items()}
