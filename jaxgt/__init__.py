"""jaxgt: two-player zero-sum imperfect-information games solved with JAX.

Games compile once into static arrays (:func:`compile_game`, :func:`load`);
solvers are pure jitted functions over them (:mod:`jaxgt.solvers`).
"""

from jaxgt import games
from jaxgt.compiler import CompiledGame, GameTree, PlayerTree, compile_game
from jaxgt.games import load, make
from jaxgt.policy import Policy
from jaxgt.solve import BatchResult, SolveResult, solve, solve_batch
from jaxgt.solvers.cfr import cfr, cfr_plus, discounted_cfr, linear_cfr, make_solver
from jaxgt.solvers.sequence_form import (best_response, best_response_value, exploitability,
                                         expected_value, nash_conv)

__version__ = "0.1.0"
