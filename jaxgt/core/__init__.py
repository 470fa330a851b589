"""The core layer: compiled games and the array algebra every solver shares.

* :mod:`jaxgt.core.compiler`: enumerate a :class:`~jaxgt.games.base.Game`
  once into a :class:`~jaxgt.core.game_tree.GameTree` of static arrays
  (:func:`compile_game`, :func:`load`).
* :mod:`jaxgt.core.sequence_form`: realization plans, counterfactual values,
  best responses, regret matching.
* :mod:`jaxgt.core.public_tree`: the public tree, ranges and counterfactual
  values of public belief states.
* :mod:`jaxgt.core.evaluate`: exact evaluation of a policy (exploitability).
* :mod:`jaxgt.core.tables`, :mod:`jaxgt.core.checks`,
  :mod:`jaxgt.core.dtypes`: per-player table gathers, argument checks, dtypes.
* :mod:`jaxgt.core.rng`: ``jax.random``'s threefry ``fold_in`` / ``split`` /
  ``uniform``, the same bits with the hash unrolled (the sampled solvers' draws).
* :mod:`jaxgt.core.xla_flags`: the XLA CPU settings ``import jaxgt`` applies (a raised
  small-loop limit, so one trajectory at a time compiles to single kernels; no YNNPACK
  reductions, which ran the CFR family's sums over actions up to 50x slower).

``core`` imports nothing of jaxgt but :mod:`jaxgt.games`.
"""

from jaxgt.core.compiler import compile_game, load
from jaxgt.core.game_tree import CompiledGame, GameTree, PlayerTree
from jaxgt.core.evaluate import Evaluation, PolicyEvaluation, policy_evaluation

# ``evaluate`` (the function) is ``jaxgt.evaluate``: bound here it would hide the module
__all__ = ["CompiledGame", "Evaluation", "GameTree", "PlayerTree", "PolicyEvaluation",
           "compile_game", "load", "policy_evaluation"]
