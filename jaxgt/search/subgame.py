"""Depth-limited solving and safe re-solving of a compiled game's subgames, on the device tree.

A subgame rooted at public state ``s`` is a device public tree
(:mod:`jaxgt.search.device_tree`) grown from ``s`` down to its leaf public states
(``depth_limit`` public levels below, or a given set), solved by the regret phase of
Growing-Tree CFR alone (:func:`jaxgt.search.gtcfr.solve_tree`) with the leaves valued by an
evaluator (:mod:`jaxgt.search.evaluator`): exact (the remaining game solved for the current
ranges), fixed continuation profiles (several: the multi-valued states of Brown, Sandholm
and Amos, "Depth-Limited Solving for Imperfect-Information Games", 2018), or a network.

Re-solving (Burch, Johanson and Bowling, "Solving Imperfect Information Games Using
Decomposition", 2014; Moravcik et al., DeepStack, 2017; Schmid et al., "Student of Games",
2023): from a :class:`Summary` (our range at ``s`` and the opponent's counterfactual values
there) the root carries the safe gadget (:class:`jaxgt.search.gadget.Gadget`), optionally
``alpha``-modified; with the opponent's best-response values to the old strategy, swapping
the re-solved strategy in never raises the opponent's best-response value.

Ranges and values are ordered like the public tree's information states at ``s``
(:class:`~jaxgt.core.public_tree.PublicTree` ``infostates``), which is the device tree's
slot order; ``opp_values`` are full-game counterfactual values divided by our total own
reach at ``s``. Continual re-solving is :class:`jaxgt.agents.resolving.ContinualResolvingAgent`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core import sequence_form
from jaxgt.core.checks import check_index, check_positive_int, check_shape
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.public_tree import build_public_tree, counterfactual_values, ranges as reaches
from jaxgt.search import device_tree
from jaxgt.search import gtcfr
from jaxgt.search import evaluator as evaluator_lib
from jaxgt.solvers import cfr as cfr_lib


@dataclasses.dataclass(frozen=True, eq=False)
class Summary:
  """What re-solving at one public state needs (host arrays)."""

  public_state: int  # full-game public state
  player: int  # i, the re-solving player
  our_range: np.ndarray  # [K_i] player i's normalised range
  opp_values: np.ndarray  # [K_o] the opponent's counterfactual values (module docstring)
  opp_range: np.ndarray  # [K_o] the opponent's normalised range (alpha mixing)


def summary_from_policy(game: CompiledGame, public_state, player: int, policy,
                        best_response: bool = True) -> Summary:
  """The :class:`Summary` at ``public_state`` of a full-game ``policy`` (e.g. a blueprint):
  ``opp_values`` are the opponent's counterfactual best-response values to
  ``policy[player]`` (``best_response=True``, the safe choice) or its values under
  ``policy``."""
  ptree = build_public_tree(game)
  ps = ptree.public_id(public_state)
  check_index("player", player, 2)
  i, o = player, 1 - player
  tree = ptree.game.device_tree("float64")
  profile = [jnp.asarray(x, jnp.float64) for x in policy]
  sequence_form.check_policy(tree, tuple(profile))
  if best_response:
    profile[o] = sequence_form.best_response(tree, tuple(profile), o)
  reach = reaches(ptree, tuple(profile), normalize=False)
  cfv = counterfactual_values(ptree, tuple(profile))
  ours, theirs = ptree.infostates[i][ps], ptree.infostates[o][ps]
  r_i = np.asarray(reach[i])[ours]
  total = r_i.sum()
  if total <= 0:
    raise ValueError(f"player {player} never reaches public state {ps} under this policy")
  r_o = np.asarray(reach[o])[theirs]
  r_o = r_o / r_o.sum() if r_o.sum() > 0 else np.full(len(theirs), 1.0 / len(theirs))
  return Summary(ps, i, r_i / total, np.asarray(cfv[o])[theirs] / total, r_o)


def subgame_tree(source: device_tree.Source, root: int, *, depth_limit: int | None = None,
                 leaves=None, capacity: int | None = None) -> device_tree.DeviceTree:
  """The device tree of the subgame at public state ``root``: every public state below it
  down to ``depth_limit`` public levels, or to the public states ``leaves`` (ids; both:
  whichever comes first; neither: the whole game below ``root``). ``capacity`` defaults to the
  source's public states."""
  check_index("root public state", root, source.num_public_states)
  if depth_limit is not None:
    depth_limit = check_positive_int("depth_limit", depth_limit)
  mask = None
  if leaves is not None:
    mask = np.zeros(source.num_public_states, bool)
    mask[np.asarray(list(leaves), np.int64)] = True
    mask[int(root)] = False
  capacity = device_tree.check_capacity(
      source, source.num_public_states if capacity is None else capacity)
  def grow(r):
    return device_tree.expand_all(source, device_tree.init_tree(source, capacity, r),
                                  depth_limit, mask)
  return jax.jit(grow)(int(root))


def solve(game: CompiledGame, root: int = 0, *, iterations: int, ranges=None,
          summary: Summary | None = None, alpha: float | None = None,
          depth_limit: int | None = None, leaves=None, evaluator=None, solver=None,
          capacity: int | None = None) -> gtcfr.SearchResult:
  """``iterations`` CFR iterations of ``solver`` on the subgame at ``root``
  (:func:`subgame_tree`); its tree is ``result.state.tree``.

  Args:
    ranges: ``(r0 [K0], r1 [K1])`` fixed root ranges (default: uniform over the root's
      information states, the chance-only beliefs at the game's root).
    summary: re-solve for ``summary.player`` with the safe gadget (ranges from the summary);
      ``alpha``: the modified gadget's mixing (``None``: exact gadget).
    evaluator: leaf values (default :func:`jaxgt.search.evaluator.exact` with ``solver``).
    solver: a CFR-family solver (default alternating CFR+ in float64; simultaneous CFR+
      converges more slowly with the gadget).
  """
  solver = solver if solver is not None else cfr_lib.cfr_plus(dtype="float64")
  source = device_tree.source_from_game(game, solver.dtype)
  tree = subgame_tree(source, root, depth_limit=depth_limit, leaves=leaves, capacity=capacity)
  config = gtcfr.make_config(source, simulations=1, capacity=tree.capacity, solver=solver,
                             value_average="search", dtype=source.tables.chance.dtype)
  if evaluator is None:
    evaluator = evaluator_lib.exact(source, solver=config.solver)
  player = opp_values = None
  if summary is None and alpha is not None:
    raise ValueError("alpha mixes the gadget's opponent range: it needs a summary")
  if summary is not None:
    if ranges is not None:
      raise ValueError("give ranges or a summary, not both")
    if summary.public_state != int(root):
      raise ValueError(f"the summary is for public state {summary.public_state}, not {root}")
    player = summary.player
    ranges = [summary.our_range, summary.opp_range][::1 if player == 0 else -1]
    opp_values = np.zeros(source.num_infostates)
    check_shape("opponent values", summary.opp_values, np.shape(summary.opp_range))
    if not np.isfinite(summary.opp_values).all():
      raise ValueError("opponent values contain NaN or infinite entries")
    opp_values[:len(summary.opp_values)] = summary.opp_values
  padded = gtcfr.root_ranges(source, int(root), ranges)
  return gtcfr.solve_tree(source, config, evaluator, tree, padded,
                          check_positive_int("iterations", iterations), player=player,
                          opp_values=opp_values, alpha=alpha)


def to_full_policy(result: gtcfr.SearchResult, policy) -> tuple:
  """``policy`` (full-game ``([I0, A], [I1, A])``) with the information states of the expanded
  nodes of ``result``'s tree replaced by its average policy (host arrays)."""
  tree = result.state.tree
  expanded = np.asarray(tree.expanded)
  out = []
  for p in (0, 1):
    full = np.array(policy[p], np.float64)
    info = np.asarray(tree.acting_info[p])  # [N, K]
    rows = np.asarray(result.policy[p]).reshape(info.shape + (-1,))
    mask = (info >= 0) & expanded[:, None]
    full[info[mask]] = rows[mask][:, :full.shape[-1]]
    out.append(full)
  return tuple(out)
