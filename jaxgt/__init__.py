"""jaxgt: two-player zero-sum imperfect-information games solved with JAX.

Games compile once into static arrays (:func:`compile_game`, :func:`load`);
solvers are pure jitted functions over them (:mod:`jaxgt.solvers`); every
policy is scored by one exact evaluation (:func:`evaluate`). The layers and
what each owns are described in ``docs/ARCHITECTURE.md``.
"""

from jaxgt import games
from jaxgt.core.compiler import CompiledGame, GameTree, PlayerTree, compile_game, load
from jaxgt.core.evaluate import evaluate
from jaxgt.core.sequence_form import (best_response, best_response_value, exploitability,
                                      expected_value, nash_conv)
from jaxgt.games import make
from jaxgt.policy import Policy
from jaxgt.solve import BatchResult, SolveResult, solve, solve_batch
from jaxgt.solvers.cfr import cfr, cfr_plus, discounted_cfr, linear_cfr, make_solver

__version__ = "0.1.0"
