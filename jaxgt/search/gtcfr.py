"""Growing-Tree CFR on the fixed-capacity device public tree.

GT-CFR (Schmid et al. 2023, "Student of Games: A unified learning algorithm for both perfect
and imperfect information games": "Search via Growing-Tree CFR" and supplement Algorithm 1)
alternates two phases on a public tree that starts as the root public state
and its children (:mod:`jaxgt.search.device_tree`):

* **regret update**: ``ceil(1/c)`` iterations of public-tree CFR over the
  current tree, by default with simultaneous updates, regret matching+ and
  linear averaging (``GTCFRConfig.solver``: any rule of the CFR family, run by
  the package's one CFR iteration, :mod:`jaxgt.solvers.cfr_iteration`, on the
  tree's history form, :mod:`jaxgt.search.history_cfr`, or, on a tree grown from a game's
  rules, on factored ranges, :mod:`jaxgt.search.factored_form`); every
  frontier leaf is valued by the evaluator in one batched call per
  iteration, terminals exactly;
* **expansion**: ``ceil(c)`` simulations, each sampling a world state of the
  focus public state from the current beliefs and descending with
  ``pi_select = 1/2 pi_PUCT + 1/2 pi_CFR(average)`` until it reaches a frontier
  node, whose child public states are then all added (``k = infinity``);
  visit counts per information state accumulate over the search and
  virtual losses separate the simulations of one phase.

``SoG(s, c)``: ``s`` simulations in total, so ``s / ceil(c)`` GT-CFR
iterations. One compiled program per (source, capacity, evaluator,
:class:`GTCFRConfig`) serves every root public state, root range and tree
shape; ``jax.vmap`` runs a batch of searches.

Re-solving (Student of Games, "Modified Continual Re-solving"): with opponent
counterfactual values the root carries the safe re-solving gadget
(:class:`jaxgt.search.gadget.Gadget`), optionally the ``alpha``-modified one.

This module holds the entry points (:func:`search`, :func:`solve_tree`,
:func:`root_ranges`) and re-exports the search's configuration
(:class:`GTCFRConfig`, :func:`make_config`, from :mod:`jaxgt.search.gtcfr_config`)
and its state and result (:class:`SearchState`, :class:`SearchResult`, from
:mod:`jaxgt.search.gtcfr_program`, which holds both phases).

Shape letters: those of :mod:`jaxgt.search.device_tree` (``N``, ``M``, ``K``,
``A``), ``B`` a batch of searches.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import check_distribution, check_key
from jaxgt.core.game_tree import NO_INDEX
from jaxgt.search import device_tree
from jaxgt.search.evaluator import Evaluator
from jaxgt.search import query_log
from jaxgt.search.gadget import check_alpha
from jaxgt.search.gtcfr_config import GTCFRConfig, make_config
from jaxgt.search.gtcfr_program import SearchProgram, SearchResult, SearchState

__all__ = ["GTCFRConfig", "SearchResult", "SearchState", "make_config", "root_ranges", "search",
           "solve_tree"]


def _check_ranges(source: device_tree.Source, ranges):
  """``[..., 2, K]`` padded root ranges, checked (traced ranges: their shape only)."""
  if isinstance(ranges, jax.core.Tracer):
    if ranges.shape[-2:] != (2, source.num_infostates):
      raise ValueError(f"root ranges must have shape [..., 2, {source.num_infostates}], got "
                       f"{ranges.shape}")
    return ranges
  ranges = np.asarray(ranges, np.float64)
  K = source.num_infostates
  if ranges.shape[-2:] != (2, K):
    raise ValueError(f"root ranges must have shape [..., 2, {K}] (padded information-state "
                     f"slots of the root public state), got {ranges.shape}")
  for p in (0, 1):
    check_distribution(f"root range of player {p}", ranges[..., p, :], K)
  return ranges


def root_ranges(source: device_tree.Source, public: int, ranges=None) -> np.ndarray:
  """``[2, K]`` padded ranges at root public state ``public`` (a rules source's root state;
  ``ranges``: per player the unpadded ``[K_p]`` range; default the chance-only beliefs of the
  game's root)."""
  K = source.num_infostates
  info = np.asarray(source.rows(source.root_key(public)).info_id)  # [2, K]
  out = np.zeros((2, K))
  for p in (0, 1):
    k = int(np.sum(info[p] >= 0))
    if ranges is None:
      out[p, :k] = 1.0 / max(k, 1)
    else:
      r = np.asarray(ranges[p], np.float64)
      if r.shape != (k,):
        raise ValueError(f"range of player {p} at public state {public} must have shape ({k},), "
                         f"got {r.shape}")
      out[p, :k] = check_distribution(f"range of player {p} at public state {public}", r, k)
  return out


@functools.lru_cache(maxsize=64)
def _compiled(program: SearchProgram, batched: bool, with_path: bool):
  def one(root, ranges, opp_values, key, path, evaluator_state, player, on):
    return program.run(root, ranges, opp_values, key, path if with_path else None,
                       evaluator_state, player, on)
  if batched:  # the evaluator's state (e.g. network parameters) is shared by the batch
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 0, 0, None, 0, 0)))
  return jax.jit(one)


def search(source: device_tree.Source, config: GTCFRConfig, evaluator: Evaluator, root, ranges,
           key, *, player=None, opp_values=None, alpha: float | None = None,
           path=None, evaluator_state=None, gadget=True) -> SearchResult:
  """GT-CFR search at public state ``root`` with padded root ``ranges [2, K]``.

  Args:
    source, config, evaluator: static (one compilation per combination).
    root: root public state (``int32``; ``[B]`` with batched arguments); with a rules source
      (:func:`jaxgt.search.rules_source.rules_source`) a state of its game after the private
      deals (``[B]`` in front of every leaf when batched).
    ranges: ``[2, K]`` (or ``[B, 2, K]``) root ranges (:func:`root_ranges`).
    key: a ``jax.random`` key (``[B]`` keys when batched).
    player: re-solve for this player with the gadget: ``opp_values [K]`` are the
      opponent's terminate values, ``alpha`` the modified gadget's mixing
      (``None``: exact gadget); ``None`` searches with both ranges fixed. The
      player is data (an int or a traced ``int32`` scalar, ``[B]`` when batched):
      one compilation serves both players.
    gadget: with ``player`` given, whether the gadget is on (``bool``, may be traced,
      ``[B]`` when batched); off, the search equals the one with ``player=None``
      (both ranges fixed), in the same program.
    path: ``[D + 1]`` public states from ``root`` to the public state of the
      decision (:func:`jaxgt.search.device_tree.public_path`): the tree starts
      as that single branch and simulations start there.
  """
  ranges = jnp.asarray(ranges, config.solver.dtype)
  batched = ranges.ndim == 3
  opp, alpha, player, on = _check_resolving(source, ranges, player, opp_values, alpha, gadget)
  shape = ranges.shape[:-2]
  key = check_key(key) if not batched else jnp.asarray(key)
  root = source.root_key(root, shape)
  if path is None:
    path_arr = jnp.full(shape + (source.max_public_depth + 1,), NO_INDEX, jnp.int32)
  else:
    path_arr = jnp.asarray(path, jnp.int32)
  program = SearchProgram(source, config, evaluator, player is not None, alpha)
  fn = _compiled(program, batched, path is not None)
  es = evaluator.init() if evaluator_state is None else evaluator_state
  return fn(root, ranges, opp, key, path_arr, es, player, on)


def _check_resolving(source, ranges, player, opp_values, alpha, gadget=True):
  """``(opp_values, alpha, player, on)`` checked, the last two as arrays of the batch shape
  (``player`` 0 and ``on`` False without re-solving)."""
  _check_ranges(source, ranges)
  ranges = jnp.asarray(ranges)
  alpha = check_alpha(alpha)
  shape = ranges.shape[:-2]
  if player is not None:
    if opp_values is None:
      raise ValueError("re-solving needs the opponent's counterfactual values (opp_values)")
    if not isinstance(player, jax.core.Tracer):
      values = np.asarray(player)
      if values.dtype.kind not in "iu" or not np.all((values == 0) | (values == 1)):
        raise ValueError(f"player must be 0, 1 or None, got {player!r}")
    if jnp.shape(player) not in ((), shape):
      raise ValueError(f"player must be a scalar or have the batch shape {shape}, got shape "
                       f"{jnp.shape(player)}")
    if jnp.shape(gadget) not in ((), shape):
      raise ValueError(f"gadget must be a bool or have the batch shape {shape}, got shape "
                       f"{jnp.shape(gadget)}")
    if not isinstance(gadget, jax.core.Tracer) and np.asarray(gadget).dtype != bool:
      raise ValueError(f"gadget must be a bool, got {gadget!r}")
  K = source.num_infostates
  opp = jnp.zeros(shape + (K,), ranges.dtype) if opp_values is None else \
      jnp.asarray(opp_values, ranges.dtype)
  if opp.shape != shape + (K,):
    raise ValueError(f"opp_values must have shape {shape + (K,)}, got {opp.shape}")
  if player is None:
    player, gadget = 0, False
  player = jnp.broadcast_to(jnp.asarray(player, jnp.int32), shape)
  on = jnp.broadcast_to(jnp.asarray(gadget, bool), shape)
  return opp, alpha, player, on


@functools.lru_cache(maxsize=64)
def _compiled_solve(program: SearchProgram, batched: bool = False, shared_tree: bool = False):
  if batched:  # a batch of ranges on a batch of trees or on one tree; iterations and the
    # evaluator's state shared
    return jax.jit(jax.vmap(program.solve, in_axes=(None if shared_tree else 0, 0, 0, None, None,
                                                    0, 0, 0)))
  return jax.jit(program.solve)


def solve_tree(source: device_tree.Source, config: GTCFRConfig, evaluator: Evaluator,
               tree: device_tree.DeviceTree, ranges, iterations, *, player=None,
               opp_values=None, alpha: float | None = None, evaluator_state=None,
               gadget=True, key=None) -> SearchResult:
  """``iterations`` public-tree CFR iterations on a given (not growing) ``tree``: depth-limited
  solving and re-solving on the device tree (the regret phase of GT-CFR alone).

  ``iterations`` may be traced; arguments (``evaluator_state`` included) as in :func:`search`;
  ``ranges [B, 2, K]`` runs ``B`` solves in one vmapped call, on a batch of trees (leading
  ``B`` on every field) or on one tree shared by the batch (its indices then are the same
  for every solve, which runs several times faster on CPU). ``key``: a ``jax.random`` key
  (``[B]`` keys when batched) drawing the query log's sample
  (:class:`~jaxgt.search.query_log.QueryLog`), required where ``config.log_queries > 0``.
  """
  ranges = jnp.asarray(ranges, config.solver.dtype)
  batched = ranges.ndim == 3
  opp, alpha, player, on = _check_resolving(source, ranges, player, opp_values, alpha, gadget)
  if tree.capacity != config.capacity:
    raise ValueError(f"tree capacity {tree.capacity} differs from config.capacity "
                     f"{config.capacity}")
  shared = tree.public.ndim == 1
  if not batched and not shared:
    raise ValueError(f"a batch of trees (public {tree.public.shape}) needs a batch of ranges "
                     f"[B, 2, K], got ranges {ranges.shape}")
  program = SearchProgram(source, config, evaluator, player is not None, alpha)
  es = evaluator.init() if evaluator_state is None else evaluator_state
  if key is None:
    key = query_log.required_key(config.log_queries, None)
    if batched:
      key = jnp.broadcast_to(key, ranges.shape[:1] + key.shape)
  key = check_key(key, ranges.shape[:1] if batched else ())
  return _compiled_solve(program, batched, batched and shared)(
      tree, ranges, opp, jnp.asarray(iterations, jnp.int32), es, player, on, key)
