"""The network as the search's leaf evaluator (:mod:`jaxgt.search.evaluator`), and the map
between a search and the network's layout (Schmid et al., "Student of Games", 2023,
Algorithm 1 and "Training Process").

GT-CFR, depth-limited solving and re-solving (:mod:`jaxgt.search.gtcfr`,
:mod:`jaxgt.search.subgame`) value the frontier of their device tree once per CFR
iteration. :func:`cvpn_evaluator` does that with one batched
network call over all ``N`` nodes of the tree (frontier nodes are kept, the
rest masked): node ``n``'s PBS is its public state and both players'
normalised own reaches of its information states; the network's
counterfactual values ``v_p(I)`` (network scale, :mod:`jaxgt.nets.encoding`)
become per-history values ``v_p(I) / c_p(I)`` with ``c_p(I) = sum_{h in I}
q(h) r_o(I_o(h))`` (CFR only sees ``sum_{h in I} pi_o(h) pi_c(h) value(h)``, of which
``c_p(I)`` is a positive multiple); a network whose head predicts expected values
(``value_space="expected"``, :data:`jaxgt.nets.cvpn.VALUE_SPACES`) hands over
``v_p(I) / c_p(I)`` directly, so no mass is computed. The network policy is the
PUCT prior of the frontier's information states. The evaluator's state IS
the network parameters, so ``gtcfr.search(..., evaluator_state=params)``
serves every parameter version with one compilation.

**Slot orders.** A device-tree node's information-state slot ``k`` names a
source augmented information state (``DeviceTree.info_id``);
:class:`PBSEncoding` slot ``j`` of the same public state names
``PBSEncoding.slots``. :class:`SlotMap` is the static permutation between
them (the identity for a source read from the compiled game, but nothing
here assumes it).

**Which public states.** The adapter needs every non-terminal history of a
leaf public state to be an entry history (its parent in another public
state), true for every non-root public state of the registered games; a
game where it fails only at its root public state is accepted (the root is
never a leaf), others are refused (``ValueError``). Value targets of a search
rooted at a public state with internal histories are not the network's leaf
values; :attr:`SlotMap.leaf_ok` marks the public states where they are.

Shape letters: ``N`` nodes, ``M`` history slots of a node, ``K`` slots per
player (device tree and encoding agree on ``K``), ``A`` actions, ``L``
logged queries.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt.core.checks import check_choice, check_positive_int, check_shape
from jaxgt.core.sequence_form import normalize, safe_div
from jaxgt.core.game_tree import NO_INDEX
from jaxgt.games.base import TERMINAL
from jaxgt.nets.cvpn import CVPN, VALUE_SPACES
from jaxgt.nets.encoding import PBS, PBSEncoding
from jaxgt.nets.factored_encoding import FactoredEncoding
from jaxgt.search import device_tree
from jaxgt.search import gtcfr
from jaxgt.search import query_log
from jaxgt.search.evaluator import Evaluator, LeafInput


@dataclasses.dataclass(frozen=True, eq=False)
class SlotMap:
  """Static map between a device-tree :class:`~jaxgt.search.device_tree.Source` and a
  :class:`PBSEncoding` of the same game (host NumPy arrays)."""

  source: device_tree.Source
  encoding: PBSEncoding
  to_encoding: np.ndarray  # [P, 2, K] int32 encoding slot of each device slot (NO_INDEX padding)
  to_device: np.ndarray  # [P, 2, K] int32 device slot of each encoding slot (NO_INDEX padding)
  leaf_ok: np.ndarray  # [P] bool every non-terminal history of the public state is an entry


@functools.lru_cache(maxsize=32)
def slot_map(source: device_tree.Source, encoding: PBSEncoding) -> SlotMap:
  """The :class:`SlotMap` of ``source`` and ``encoding`` (``ValueError`` if they do not fit;
  cached: both are compared by identity)."""
  if source.game is None:
    raise ValueError("the network evaluator needs a source read from a compiled game")
  encoding.check_for(source.game)
  if source.num_public_states != encoding.num_public_states:
    raise ValueError(f"source has {source.num_public_states} public states, the encoding "
                     f"{encoding.num_public_states}")
  if source.num_infostates != encoding.k_max or source.num_actions != encoding.num_actions:
    raise ValueError(f"source has K={source.num_infostates}, A={source.num_actions}; the "
                     f"encoding K={encoding.k_max}, A={encoding.num_actions}")
  P, K = encoding.num_public_states, encoding.k_max
  info_id = np.asarray(source.tables.info_id)  # [P, 2, K]
  to_enc = np.full((P, 2, K), NO_INDEX, np.int32)
  to_dev = np.full((P, 2, K), NO_INDEX, np.int32)
  rows = np.arange(P)[:, None]
  for p in (0, 1):
    ids = info_id[:, p]
    ok = ids >= 0
    enc_slot = np.where(ok, encoding.slot_of[p][np.maximum(ids, 0)], NO_INDEX)
    to_enc[:, p] = enc_slot
    r, k = np.nonzero(ok)
    to_dev[r, p, enc_slot[r, k]] = k
    if not np.array_equal(ok, encoding.mask[:, p]) or not np.array_equal(
        encoding.slots[rows, p, np.maximum(enc_slot, 0)][ok], ids[ok]):
      raise ValueError(f"player {p}'s information states of the source and the encoding differ")
  t = source.game.tree
  hp = np.asarray(t.history_public)
  par = np.asarray(t.parent)
  internal = (np.asarray(t.player) != TERMINAL) & (par >= 0) & (hp[np.maximum(par, 0)] == hp)
  leaf_ok = np.ones(P, bool)
  leaf_ok[hp[internal]] = False
  roots = np.asarray(source.public_parent) < 0
  if np.any(~leaf_ok & ~roots):
    s = int(np.flatnonzero(~leaf_ok & ~roots)[0])
    raise ValueError(f"{source.game.name}: public state {s} holds a non-terminal history whose "
                     "parent lies in the same public state; the network's leaf values need "
                     "every non-terminal history of a leaf public state to enter it from its "
                     "parent public state")
  return SlotMap(source=source, encoding=encoding, to_encoding=to_enc, to_device=to_dev,
                 leaf_ok=leaf_ok)


def _permute(table, public, x):
  """``x [..., 2, K, ...]`` re-ordered along ``K`` by ``table [P, 2, K]`` (source slot of each
  target slot at the public states ``public [...]``; zero where ``NO_INDEX``)."""
  idx = jnp.asarray(table)[jnp.maximum(public, 0)]  # [..., 2, K]
  axis = idx.ndim - 1
  idx = idx.reshape(idx.shape + (1,) * (x.ndim - idx.ndim))
  got = jnp.take_along_axis(x, jnp.maximum(idx, 0), axis=axis)
  return jnp.where(idx >= 0, got, 0.0)


def to_encoding_order(smap: SlotMap, public, x):
  """``x [..., 2, K, ...]`` in device slot order -> encoding slot order (zero on padding)."""
  return _permute(smap.to_device, public, x)


def to_device_order(smap: SlotMap, public, x):
  """``x [..., 2, K, ...]`` in encoding slot order -> device slot order (zero on padding)."""
  return _permute(smap.to_encoding, public, x)


def _normalise(smap: SlotMap, public, ranges):
  """Ranges ``[..., 2, K]`` (encoding order) normalised per player, uniform over the valid
  slots where a player has no mass (as :func:`jaxgt.core.public_tree.ranges`)."""
  mask = jnp.asarray(smap.encoding.mask)[jnp.maximum(public, 0)]
  return normalize(jnp.maximum(ranges, 0.0), mask)


def leaf_reach(leaves: LeafInput, K: int) -> jax.Array:
  """``[N, 2, K]`` each player's own reach of every node's information-state slots at its
  leaf slots (zero where the node has none; the device tree's slot order)."""
  tree = leaves.tree
  N, M = leaves.leaf.shape
  node = jnp.arange(N * M) // M
  leaf = leaves.leaf.reshape(-1)
  rows = []
  for p in (0, 1):
    info = tree.info[p].reshape(-1)
    ok = leaf & (info >= 0)
    seg = jnp.where(ok, node * K + info, N * K)
    r = jax.ops.segment_max(jnp.where(ok, leaves.reach[p].reshape(-1), 0.0), seg, N * K + 1)
    rows.append(jnp.maximum(r[:-1], 0.0).reshape(N, K))
  return jnp.stack(rows, axis=1)


def node_pbs(smap: SlotMap, leaves: LeafInput) -> PBS:
  """The PBS ``[N]`` of every node of ``leaves.tree`` in the encoding's layout: each
  player's own reach (root ranges included) of the node's information states at its
  leaf slots, normalised (uniform where there is none; nodes without leaf slots get
  uniform ranges and are ignored by :func:`leaf_values`)."""
  dev = leaf_reach(leaves, smap.encoding.k_max)  # [N, 2, K] device order
  public = jnp.maximum(leaves.tree.public, 0)
  return PBS(public=public, ranges=_normalise(smap, public, to_encoding_order(smap, public, dev)))


def _expected_values(encoding, pbs: PBS, values, value_space: str, mass) -> jax.Array:
  """``v_p(I) / c_p(I)`` ``[N, 2, K]`` from network ``values`` in ``value_space``:
  counterfactual values divided by ``mass(ranges)`` (zero where it is zero), expected values
  times the encoding's ``value_unit``."""
  if value_space == "expected":
    return values * jnp.asarray(encoding.value_unit, values.dtype)
  return safe_div(values, mass(jnp.asarray(pbs.ranges, values.dtype)))


def leaf_values(smap: SlotMap, leaves: LeafInput, pbs: PBS, cfvs,
                value_space: str = "counterfactual") -> jax.Array:
  """``[2, N, M]`` player 0's value of each leaf slot (row ``p`` for ``p``'s update): the
  network-scale ``cfvs [N, 2, K]`` (encoding order) divided by ``c_p(I)`` (module
  docstring), or with ``value_space="expected"`` expected values ``[N, 2, K]`` in units of
  ``encoding.value_unit`` scaled to payoffs; zero off the leaf slots."""
  tree = leaves.tree
  N, M = leaves.leaf.shape
  K = smap.encoding.k_max
  cfvs = jnp.asarray(cfvs)
  check_shape("network values", cfvs, (N, 2, K))  # nodes x players x slots
  dtype = leaves.chance.dtype
  public = pbs.public
  ratio = _expected_values(smap.encoding, pbs, cfvs.astype(dtype), value_space,
                           lambda r: smap.encoding.counterfactual_mass(public, r))
  ratio = to_device_order(smap, public, ratio)  # [N, 2, K] from encoding order
  out = []
  for p in (0, 1):
    info = tree.info[p]  # [N, M]
    v = jnp.take_along_axis(ratio[:, p], jnp.maximum(info, 0), axis=1)
    out.append(jnp.where(leaves.leaf & (info >= 0), v, 0.0) * (1.0 if p == 0 else -1.0))
  return jnp.stack(out)


def _chunked_call(fn, state, pbs: PBS, need, chunk: int):
  """``fn(state, ·)`` on the nodes with ``need [N]`` only, ``chunk`` at a time: needed nodes
  are moved to the front and a ``while_loop`` runs ``ceil(#needed / chunk)`` calls (under
  ``vmap``, the most any batch member needs). Other nodes get zeros."""
  N = pbs.ranges.shape[0]
  padded = -(-N // chunk) * chunk
  order = jnp.argsort(~need, stable=True)
  count = jnp.sum(need, dtype=jnp.int32)
  src = jax.tree_util.tree_map(
      lambda x: jnp.concatenate([x[order], jnp.zeros((padded - N,) + x.shape[1:], x.dtype)]), pbs)
  part0 = jax.tree_util.tree_map(lambda x: x[:chunk], src)
  shapes = jax.eval_shape(lambda p: fn(state, p), part0)
  out0 = jax.tree_util.tree_map(lambda s: jnp.zeros((padded,) + s.shape[1:], s.dtype), shapes)

  def body(carry):
    i, out = carry
    part = jax.tree_util.tree_map(lambda x: lax.dynamic_slice_in_dim(x, i * chunk, chunk), src)
    res = fn(state, part)
    out = jax.tree_util.tree_map(
        lambda o, r: lax.dynamic_update_slice_in_dim(o, r.astype(o.dtype), i * chunk, 0), out, res)
    return i + 1, out

  _, out = lax.while_loop(lambda c: c[0] * chunk < count, body, (jnp.zeros((), jnp.int32), out0))
  return jax.tree_util.tree_map(lambda o: jnp.zeros((N,) + o.shape[1:], o.dtype).at[order].set(
      o[:N]), out)


def factored_node_pbs(leaves: LeafInput) -> PBS:
  """The PBS ``[N]`` of every node of a tree grown from a game's rules
  (:mod:`jaxgt.search.rules_source`): the node's representative state and each player's own
  reach of its private states at its leaf pairs, normalised (uniform over the private states
  present where there is none)."""
  tree = leaves.tree
  held = jnp.moveaxis(tree.info_id >= 0, 0, 1)  # [N, 2, K]
  return PBS(public=tree.keys.state,
             ranges=normalize(leaf_reach(leaves, tree.info_id.shape[-1]), held))


def factored_leaf_values(leaves: LeafInput, pbs: PBS, cfvs, encoding=None,
                         value_space: str = "counterfactual") -> jax.Array:
  """``[2, N, M]`` player 0's value of each leaf pair (row ``p`` for ``p``'s update) from
  network-scale ``cfvs [N, 2, K]`` (:mod:`jaxgt.nets.factored_encoding`): ``v_p(k) / c_p(k)``
  at the pairs holding ``k``, ``c_p(k) = sum_k' q(k, k') r_o(k')`` with ``q`` the pairs' chance
  probability given the node's public chance events (``private_chance``), so that the
  counterfactual value CFR sees at ``k`` is ``Z`` (those events' probability) times the
  opponent's reach mass times ``v_p(k)``. With ``value_space="expected"``, ``cfvs`` are
  expected values in units of ``encoding.value_unit`` (``v_p(k) / c_p(k)`` up to that unit)."""
  tree = leaves.tree
  N, M = leaves.leaf.shape
  K = tree.info_id.shape[-1]
  dtype = leaves.chance.dtype
  cfvs = jnp.asarray(cfvs, dtype)
  check_shape("network values", cfvs, (N, 2, K))
  k0, k1 = tree.info[0], tree.info[1]  # [N, M]
  if value_space == "expected" and encoding is None:
    raise ValueError("expected values need the game's encoding (its value_unit)")

  def mass(r):  # [N, 2, K]
    ok = k0 >= 0
    # the pairs' chance given the node's public chance events (the chance reach over Z)
    z = jnp.asarray(tree.keys.reach, dtype)[:, None]
    q = jnp.where(ok & (z > 0), leaves.chance / jnp.where(z > 0, z, 1.0), 0.0)
    r1 = jnp.take_along_axis(r[:, 1], jnp.maximum(k1, 0), axis=1)
    r0 = jnp.take_along_axis(r[:, 0], jnp.maximum(k0, 0), axis=1)
    rows = jnp.arange(N)[:, None]
    c0 = jnp.zeros((N, K), dtype).at[rows, jnp.maximum(k0, 0)].add(q * r1)
    c1 = jnp.zeros((N, K), dtype).at[rows, jnp.maximum(k1, 0)].add(q * r0)
    return jnp.stack([c0, c1], axis=1)

  ratio = jnp.moveaxis(_expected_values(encoding, pbs, cfvs, value_space, mass), 1, 0)
  out = []
  for p, k in ((0, k0), (1, k1)):
    v = jnp.take_along_axis(ratio[p], jnp.maximum(k, 0), axis=1)
    out.append(jnp.where(leaves.leaf & (k >= 0), v, 0.0) * (1.0 if p == 0 else -1.0))
  return jnp.stack(out)


def pbs_evaluator(source: device_tree.Source, encoding: PBSEncoding,
                  fn: Callable[[Any, PBS], tuple], init: Callable[[], Any] = lambda: (),
                  name: str = "pbs", chunk: int | None = None,
                  value_space: str = "counterfactual") -> Evaluator:
  """A GT-CFR evaluator from ``fn(state, PBS [N]) -> (values [N, 2, K], policy [N, 2, K, A] or
  None)`` in the encoding's layout, ``values`` in ``value_space``
  (:data:`~jaxgt.nets.cvpn.VALUE_SPACES`: network-scale counterfactual values, or expected
  values in units of ``encoding.value_unit``); see :func:`node_pbs`, :func:`leaf_values` (on
  a tree grown from a device game's rules, ``encoding`` that game's
  :class:`~jaxgt.nets.factored_encoding.FactoredEncoding`, PBSs of representative states:
  :func:`factored_node_pbs`, :func:`factored_leaf_values`); ``state`` is the evaluator state
  (unchanged).

  ``chunk=None``: one call per CFR iteration on all ``N`` nodes. ``chunk=c``: only the nodes
  with leaf slots are valued, ``c`` per call, as many calls as they need (a tree that is
  still small costs little; Schmid et al.'s leaf queries are exactly these nodes).
  """
  factored = getattr(source, "factored", False)
  if factored:  # a tree grown from a device game's rules: private states are the slots
    if not isinstance(encoding, FactoredEncoding) or encoding.game is not source.rules:
      raise ValueError("a tree grown from a game's rules needs that game's FactoredEncoding")
    smap = None
  else:
    smap = slot_map(source, encoding)
  if chunk is not None:
    chunk = check_positive_int("chunk", chunk)
  check_choice("value_space", value_space, VALUE_SPACES)

  def apply(state, leaves: LeafInput):
    pbs = factored_node_pbs(leaves) if factored else node_pbs(smap, leaves)
    if chunk is None:
      cfvs, policy = fn(state, pbs)
    else:
      cfvs, policy = _chunked_call(fn, state, pbs, jnp.any(leaves.leaf, axis=1), chunk)
    if factored:
      values = factored_leaf_values(leaves, pbs, cfvs, encoding, value_space)
    else:
      values = leaf_values(smap, leaves, pbs, cfvs, value_space)
    prior = None
    if policy is not None:
      policy = jnp.asarray(policy, leaves.chance.dtype)
      dev = policy if factored else to_device_order(smap, pbs.public, policy)
      prior = jnp.moveaxis(dev, 1, 0)  # [2, N, K, A]
    return (values, prior), state

  return Evaluator(init=init, apply=apply, name=name)


def cvpn_evaluator(source: device_tree.Source, model: CVPN, params=None,
                   chunk: int | None = None) -> Evaluator:
  """GT-CFR's leaf evaluator from ``model`` (Schmid et al., Student of Games, 2023, "Search
  via Growing-Tree CFR"): the state is the flax parameters (``init()`` returns ``params``;
  with ``params=None`` every search must pass them as ``evaluator_state``); values from the
  value head (in the model's value space, so an expected-value head needs no counterfactual
  mass), the PUCT prior from the policy head; ``chunk`` as :func:`pbs_evaluator`."""
  def init():
    if params is None:
      raise ValueError("this CVPN evaluator has no parameters: pass evaluator_state=params "
                       "(or cvpn_evaluator(..., params=...))")
    return params

  def fn(state, pbs):
    out = model.apply(state, pbs)
    return (out.head if model.value_space == "expected" else out.values), out.policy

  return pbs_evaluator(source, model.encoding, fn, init=init, name="cvpn", chunk=chunk,
                       value_space=model.value_space)


def query_pbs(encoding: PBSEncoding, source: device_tree.Source, queries: query_log.QueryLog):
  """``(PBS [..., L], valid [..., L] bool)``: the logged leaf queries of a search in the
  network's layout (ranges as :func:`node_pbs` builds them; unused entries invalid)."""
  smap = slot_map(source, encoding)
  public = jnp.asarray(queries.public)
  valid = public >= 0
  pub = jnp.maximum(public, 0)
  ranges = _normalise(smap, pub, to_encoding_order(smap, pub, jnp.asarray(queries.ranges)))
  return PBS(public=pub, ranges=ranges), valid


def search_targets(encoding: PBSEncoding, source: device_tree.Source,
                   result: gtcfr.SearchResult, ranges=None):
  """``(PBS, values [2, K], policy [2, K, A])``: a searched root's training targets in the
  network's layout (Schmid et al. 2023, "Training Process"; add ``B`` in front for a batch).

  ``values`` are the search's average root counterfactual values divided by the
  root's chance mass ``C(s)`` (network scale, :mod:`jaxgt.nets.encoding`);
  ``policy`` is the average policy at the root's information states (zero rows where
  a slot does not act). ``ranges [2, K]`` are the search's root ranges (device order,
  as given to :func:`jaxgt.search.gtcfr.search`); default the root's reach in
  ``result.node_reach``. Meaningful values need :attr:`SlotMap.leaf_ok` at the root.
  """
  smap = slot_map(source, encoding)
  K = encoding.k_max
  public = jnp.maximum(result.state.tree.public[..., 0], 0)
  if ranges is None:
    ranges = result.node_reach[..., :K]
  ranges = to_encoding_order(smap, public, jnp.asarray(ranges))
  pbs = PBS(public=public, ranges=_normalise(smap, public, ranges))
  mass = jnp.asarray(encoding.chance_mass)[public]
  rv = jnp.asarray(result.root_values)
  values = to_encoding_order(smap, public, rv / mass[..., None, None].astype(rv.dtype))
  policy = jnp.stack([result.policy[p][..., :K, :] for p in (0, 1)], axis=-3)
  policy = to_encoding_order(smap, public, policy)
  legal = jnp.asarray(encoding.legal)[public]
  policy = jnp.where(legal, policy, 0.0)
  return pbs, values, policy
