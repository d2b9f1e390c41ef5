"""The Passive-Aggressive classifier (PA) and its mistake bounds, as a boundlab plug-in.

Crammer, Dekel, Keshet, Shalev-Shwartz & Singer, "Online Passive-Aggressive Algorithms", JMLR 7:551-585,
2006, Fig. 1 (PA) and Theorem 2: if ||x_t|| <= R for all t and some u has y_t u.x_t >= 1 for all t, then
sum_t l_t^2 <= ||u||^2 R^2, where l_t = max(0, 1 - y_t w_t.x_t). A mistake (y_t w_t.x_t <= 0) has l_t >= 1,
so mistakes <= ||u||^2 R^2. With a unit w* of margin gamma, u = w*/gamma: both are <= (R/gamma)^2.
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.bounds.base import Bound
from pipeline.learners.base import Learner, Outcome, log_grid
from pipeline.params import Param, at_least

U = 2.0**-53  # unit roundoff: bound values are rounded up by (1 + 8U), as boundlab's own bounds are


class PassiveAggressive(Learner):
    """PA: w_1 = 0; l_t = max(0, 1 - y_t w_t.x_t); w_{t+1} = w_t + (l_t / ||x_t||^2) y_t x_t.

    A mistake is y_t w_t.x_t <= 0 (a score of 0 counts as one). ``passes`` passes over the sample, in order.
    """

    name = "passive_aggressive"
    params = (Param("passes", int, at_least(1), default=1),)  # PassiveAggressive(*, passes=1)

    def learn_one(self, x: np.ndarray, y: float) -> bool:
        """One step; True when it was a mistake. Keeps ``w_`` and the last step's loss ``loss_``."""
        x = np.asarray(x, dtype=np.float64)
        if not hasattr(self, "w_"):
            self.check()
            self.w_ = np.zeros(x.shape[0])
        margin = float(y) * float((self.w_ * x).sum())
        self.loss_ = max(0.0, 1.0 - margin)
        norm2 = float((x * x).sum())
        if self.loss_ > 0.0 and norm2 > 0.0:
            self.w_ = self.w_ + (self.loss_ / norm2) * float(y) * x
        return margin <= 0.0

    def run(self, dataset: object, rng: np.random.Generator) -> Outcome:
        """``passes`` passes over the dataset in its order (PA draws no randomness)."""
        X, y = dataset.X, dataset.y
        T = self.passes * X.shape[0]
        mistake, loss = np.zeros(T, dtype=np.int8), np.zeros(T)
        for t in range(T):
            mistake[t] = self.learn_one(X[t % X.shape[0]], y[t % X.shape[0]])
            loss[t] = self.loss_
        steps = log_grid(T)
        sq = np.cumsum(loss**2)
        return Outcome(
            quantities={"mistakes": int(mistake.sum()), "squared_hinge": math.fsum(loss**2)},
            curves={"mistakes": (steps, np.cumsum(mistake)[steps - 1]), "squared_hinge": (steps, sq[steps - 1])},
            trace={"mistake": mistake, "loss": loss},
            stats={"T": T},
        )


def _r_over_gamma_squared(s) -> float:  # noqa: ANN001
    # R is a certified upper bound of max ||x_t||, gamma_lo a certified lower bound of the margin: the value
    # is >= (R*/gamma*)^2, the theorem's ||u||^2 R^2 at u = w*/gamma*; the factor covers this line's rounding.
    return (s["R"] / s["gamma_lo"]) ** 2 * (1.0 + 8.0 * U)


def _separable(s) -> str | None:  # noqa: ANN001
    return None if s["separable"] else "data not certified separable (no u with y_t u.x_t >= 1 for all t)"


_COMMON = dict(learner="passive_aggressive", guarantee="D", requires=("R", "gamma_lo", "separable", "T"),
               applies=_separable, trivial=lambda s: float(s["T"]), anytime="monotone")

BOUNDS = (
    Bound(name="pa_mistakes", title="PA mistakes", quantity="mistakes", formula="floor((R/gamma_lo)^2)",
          reference="Crammer et al. 2006 (JMLR 7), Theorem 2, with l_t >= 1 on a mistake",
          value=lambda s: math.floor(_r_over_gamma_squared(s)),
          trivial_text="T, the rounds presented (a learner errs at most once a round)", **_COMMON),
    Bound(name="pa_squared_hinge", title="PA squared hinge", quantity="squared_hinge", formula="(R/gamma_lo)^2",
          reference="Crammer et al. 2006 (JMLR 7), Theorem 2: sum_t l_t^2 <= ||u||^2 R^2",
          value=_r_over_gamma_squared, trivial_text="T, w = 0 throughout has l_t = 1 every round", **_COMMON),
)
