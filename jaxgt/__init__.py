"""jaxgt: two-player zero-sum imperfect-information games solved with JAX.

Games compile once into static arrays (:func:`compile_game`, :func:`load`);
solvers are pure jitted functions over them (:mod:`jaxgt.solvers`); every
policy is scored by one exact evaluation (:func:`evaluate`). The layers and
what each owns are described in ``docs/ARCHITECTURE.md``.
"""

from jaxgt.core import xla_flags as _xla_flags

_xla_flags.tune_cpu()  # before JAX's first backend: see jaxgt/core/xla_flags.py

from jaxgt import games  # noqa: E402
from jaxgt.core.compiler import compile_game, load
from jaxgt.core.game_tree import CompiledGame, GameTree, PlayerTree
from jaxgt.core.evaluate import evaluate  # noqa: E402
from jaxgt.core.sequence_form import (  # noqa: E402
    best_response, best_response_value, exploitability, expected_value, nash_conv)
from jaxgt.games import make  # noqa: E402
from jaxgt.policy import Policy  # noqa: E402
from jaxgt.solving import BatchResult, SolveResult, solve, solve_batch  # noqa: E402
from jaxgt.solvers.cfr import cfr, cfr_plus, discounted_cfr, linear_cfr, make_solver  # noqa: E402

__version__ = "0.1.0"
