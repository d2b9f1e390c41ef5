"""The certified solvers: every optimum, comparator and certificate a bound is checked against.

- :mod:`pipeline.solvers.dual`: the Pegasos family's f* (linear and kernel SDCA with a certified
  duality gap, docs/bounds.md sections 4-6);
- :mod:`pipeline.solvers.multiclass`: the multiclass SVM's certified optimum and the comparator ball's
  certified minimum (docs/bounds.md sections 7-8; the losses and held-out intervals it uses live in
  :mod:`pipeline.risk`, below the learners);
- :mod:`pipeline.solvers.comparators`: the comparator directions of the perceptron bounds and their
  certified margins (docs/bounds.md section 2);
- :mod:`pipeline.solvers.perceptron_worst`: the exact worst case of Novikoff's class, a margin SDP with its
  duality gap and an instance that attains it (docs/bounds.md section 1, "The exact worst case"; the data
  layer's ``dataset=worst_case`` is that instance);
- :mod:`pipeline.solvers.games`: the adversary's exact value against Halving on small classes, and the
  Littlestone dimension, by game search (docs/bounds.md section 3; Weighted Majority's game, which no job
  computes, is :mod:`pipeline.analysis.games`);
- :mod:`pipeline.solvers.certified`: the certified arithmetic of a sample's statistics, the radius R and
  rigorous bounds of the margins from explicit witnesses (docs/bounds.md section 1);
- :mod:`pipeline.solvers.max_margin`: the max-margin search that proposes those witnesses and decides
  separability (HiGHS's LP, the hard-margin QP, the working set and the sparse active set).

Learners never import this package (they report what they did, :class:`pipeline.learners.base.Outcome`;
the one exception, the multiclass SVM whose training is the certified solve, is listed in tests/test_layers.py);
:mod:`pipeline.job.statistics` asks it for exactly the statistics the evaluated bounds require. The data
layer's certificates (R, the margin interval, LP separability) are assembled in :mod:`pipeline.data.certify`
from the two modules above: they describe the sample before any learner runs, and the data layer imports
nothing above it.
"""

ATTEMPTS = tuple({"tol_gap_abs": t, "tol_gap_rel": t, "tol_feas": t, "max_iter": 400} for t in (1e-10, 1e-9)) + ({},)


def solve_sdp(problem: object) -> str:
    """Solve a cvxpy problem with Clarabel: tight tolerances first, then looser, then Clarabel's defaults; the
    last attempt's result stands if none is "optimal". Returns the status. The callers certify the answer
    themselves (a dual bound, a replayed instance), so an inaccurate solve only widens what they report."""
    import warnings

    import cvxpy as cp

    status = "solver_error"
    for options in ATTEMPTS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                problem.solve(solver=cp.CLARABEL, **options)
            except cp.error.SolverError:
                continue
        status = problem.status
        if status == "optimal":
            break
    return status
