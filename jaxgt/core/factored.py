"""The public tree of a device game on factored ranges (Moravcik et al. 2017, DeepStack;
Brown et al. 2020, ReBeL; Schmid et al. 2023, Student of Games, Sec. 3).

Where a game's hidden information is one private state per player (cards,
dice: :attr:`DeviceGame.num_private` ``(K0, K1)``), an information state is a
pair (public state, private state), so a player's reach and counterfactual
values at a public state are vectors ``[K_p]`` and no history-by-history
array is needed. :func:`build_factored_tree` expands the device game's rules
one public state at a time, breadth first, from the first public state after
the private deals, with one representative state per public state and the
game's :meth:`~jaxgt.games.device.DeviceGame.with_private` for the other
deals; chance between public states is public (each outcome its own public
state), and its probabilities stay in the deals' joint chance reach
(``Z(s) private_chance(s)``, ``Z`` the public outcomes' marginal probability).

A terminal public state's values are ``[K0, K1]`` matrices: player 0's utility
times that chance reach (the generic fallback; player 1's is the negated
transpose), so player 0's counterfactual values there are ``payoff @ reach_1``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame, key_codes


@dataclasses.dataclass(frozen=True, eq=False)
class FactoredTree:
  """A device game's public tree on factored ranges (NumPy arrays; ``N`` public states in
  breadth-first order, ``B = max(A, C)`` child slots, ``D_p`` decision states of player
  ``p``, ``T`` terminal public states)."""

  game: DeviceGame
  num_private: tuple  # (K0, K1)
  num_actions: int  # A
  player: np.ndarray  # [N] int32 0, 1, CHANCE or TERMINAL
  parent: np.ndarray  # [N] int32 (-1 at the root)
  action: np.ndarray  # [N] int32 action or chance outcome into the state (-1 at the root)
  children: np.ndarray  # [N, B] int32 child public state per action / outcome (-1: none)
  levels: tuple  # ((lo, hi), ...) the states of each depth
  decision: np.ndarray  # [N] int32 index among its player's decision states (-1 elsewhere)
  # ([D0], [D1]) int32 the decision states of each player, by own depth (the player's decisions
  # above them), then state order
  decisions: tuple
  own_levels: tuple  # per player, ((lo, hi), ...) the decision indices of each own depth
  # [2, N] int32 each player's last own sequence above a state: d A + a (decision d, action
  # a), or D_p A (the empty sequence)
  last_seq: np.ndarray
  seq_parent: tuple  # ([D0], [D1]) int32 the last own sequence above each decision state
  # per player, the terminals grouped by that player's last sequence: (order [T] the terminal
  # indices in group order, blocks ((n, c), ...) n sequences of c terminals each, row [D_p A +
  # 1] each sequence's group in block order (the number of groups where it has none))
  terminal_groups: tuple
  legal: tuple  # ([D0, A], [D1, A]) bool legal actions
  terminals: np.ndarray  # [T] int32 the terminal public states
  # [T, K0, K1] float64 player 0's utility times the deals' chance reach; None where the game
  # supplies terminal_values (then a terminal's values are terminal_z times those)
  payoff: np.ndarray | None
  terminal_z: np.ndarray  # [T] float64 probability of the public chance events to each terminal
  chance_mass: tuple  # ([D0, K0], [D1, K1]) float64 chance reach of each (state, private)
  info_keys: tuple  # ([D0, K0, W], [D1, K1, W]) int32 information-state keys
  public_keys: np.ndarray  # [N, Wp] int32
  states: object  # the representative states (a pytree of [N, ...] NumPy arrays)

  @property
  def num_states(self) -> int:
    return len(self.player)

  @property
  def num_infostates(self) -> tuple:
    """``(D0 K0, D1 K1)``: the rows of each player's ``[I, A]`` tables (every pair of a
    decision state and a private state, reachable by chance or not)."""
    return tuple(len(self.decisions[p]) * self.num_private[p] for p in (0, 1))

  def infostate_strings(self, player: int) -> list:
    """``[D_p K_p]`` the information-state strings of ``player``'s rows (``None`` where
    chance never deals that private state there)."""
    keys, mass = self.info_keys[player], self.chance_mass[player]
    K = self.num_private[player]
    return [self.game.info_string(keys[d, k], player) if mass[d, k] > 0 else None
            for d in range(len(keys)) for k in range(K)]


def _pow2(n: int) -> int:
  return 1 << max(0, (n - 1).bit_length())


def check_factored(game, what: str = "the factored public tree") -> None:
  """Raises unless ``game`` is a device game whose public states factor (``num_private`` and
  ``with_private``): ``TypeError`` for another kind of game, ``ValueError`` otherwise."""
  if not isinstance(game, DeviceGame):
    raise TypeError(f"{what} needs a device game, got {type(game).__name__}")
  if game.num_private is None:
    raise ValueError(f"{game.game_string()} has no public/private factorisation "
                     "(num_private is None)")
  if type(game).with_private is DeviceGame.with_private:
    raise ValueError(f"{game.game_string()} does not define with_private, which {what} needs")


def private_pairs(game: DeviceGame, state):
  """``state`` under every deal: the same public history with private states ``(k0, k1)``
  (a pytree with ``[K0, K1]`` in front of every leaf; ``with_private``)."""
  K0, K1 = game.num_private

  def pair(k0, k1):
    return game.with_private(game.with_private(state, 0, k0), 1, k1)

  return jax.vmap(lambda a: jax.vmap(lambda b: pair(a, b))(jnp.arange(K1)))(jnp.arange(K0))


def _first_deal(game: DeviceGame):
  """``(state, steps)``: the first state after both private deals and the steps to it (each
  chance step takes its first outcome of positive probability); ``ValueError`` if players act
  first."""
  state = game.init()
  for t in range(int(game.max_length) + 1):
    if all(int(game.private_index(state, p)) >= 0 for p in (0, 1)):
      return state, t
    if int(game.current_player(state)) != CHANCE:
      break
    state = game.step(state, jnp.int32(int(np.argmax(np.asarray(game.chance_probs(state)) > 0))))
  raise ValueError(f"{game.game_string()}: no public state after the private deals (players "
                   "act before both private states are dealt), so its ranges do not factor")


def dealt_root(game: DeviceGame):
  """The first public state after the private deals (each chance step takes its first
  outcome of positive probability)."""
  return _first_deal(game)[0]


def deal_steps(game: DeviceGame) -> int:
  """Steps from the root to the first state after both private deals (the deals of a game
  whose ranges factor take as many steps whatever they deal)."""
  return _first_deal(game)[1]


# private pairs times chance outcomes read per public state at most (the pairs' chance
# probabilities of a public chance node); above, public chance below the root is refused
PAIR_OUTCOME_LIMIT = 1 << 22


def uses_terminal_values(game: DeviceGame) -> bool:
  """Whether ``game`` supplies :meth:`~jaxgt.games.device.DeviceGame.terminal_values`."""
  return type(game).terminal_values is not DeviceGame.terminal_values


def _describers(game: DeviceGame, with_chance: bool):
  """A jitted function over a batch of representative states: what each public state is, and
  its children (``with_chance``: the pairs' chance probabilities at public chance nodes)."""
  K0, K1 = game.num_private
  B, A, C = game.num_distinct, game.num_actions, game.num_outcomes
  k0s, k1s = jnp.arange(K0), jnp.arange(K1)
  hook = uses_terminal_values(game)

  def describe(s):
    pc = game.private_chance(s)
    out = dict(mass0=jnp.sum(pc, axis=1), mass1=jnp.sum(pc, axis=0))
    if not hook:  # the generic [K0, K1] payoff matrix
      ret = jax.vmap(jax.vmap(game.returns))(private_pairs(game, s))[..., 0]
      out["joint_util"] = jnp.where(pc > 0, pc * ret, 0.0)
    if C and with_chance:
      cp = jax.vmap(jax.vmap(game.chance_probs))(private_pairs(game, s))  # [K0, K1, C]
      joint = (pc[..., None] * cp).reshape(K0 * K1, C)
      marg, best = jnp.sum(joint, axis=0), jnp.argmax(joint, axis=0)
    else:
      marg, best = jnp.zeros(C), jnp.zeros(C, jnp.int32)
    keys = (jax.vmap(lambda k: game.info_key(game.with_private(s, 0, k), 0))(k0s),
            jax.vmap(lambda k: game.info_key(game.with_private(s, 1, k), 1))(k1s))
    player = game.current_player(s)
    legal = jnp.zeros(B, bool).at[:A].set(game.legal_mask(s))
    valid = jnp.where(player == CHANCE, jnp.zeros(B, bool).at[:C].set(marg > 0), legal)
    margB = jnp.ones(B).at[:C].set(jnp.where(player == CHANCE, marg, 1.0))

    def child(a):
      b = best[jnp.minimum(a, max(C - 1, 0))] if C else 0
      dealt = game.with_private(game.with_private(s, 0, b // K1), 1, b % K1)
      chance_child = game.step(dealt, a) if C else s
      own = game.step(s, a)
      return jax.tree.map(lambda x, y: jnp.where(player == CHANCE, x, y), chance_child, own)

    kids = jax.vmap(child)(jnp.arange(B, dtype=jnp.int32))
    out.update(player=player, legal=legal[:A], valid=valid, marg=margB, keys0=keys[0],
               keys1=keys[1], pkey=game.public_key(s))
    return out, kids

  if K0 * K1 > (1 << 16):  # one state at a time: [K0, K1] arrays per state in memory
    return jax.jit(lambda states: jax.lax.map(describe, states))
  return jax.jit(jax.vmap(describe))


@functools.lru_cache(maxsize=32)
def _state_facts(game: DeviceGame):
  """``(template, facts)``: the shapes of ``game.init()`` and a jitted function of a batch of
  states: whether both private states are dealt and the player to act (compiled once per
  game, not once per check)."""

  def facts(s):
    dealt = (game.private_index(s, 0) >= 0) & (game.private_index(s, 1) >= 0)
    return dealt, game.current_player(s)

  return jax.eval_shape(game.init), jax.jit(jax.vmap(facts))


def check_dealt_state(game: DeviceGame, state, shape=(), *, what: str = "root",
                      terminal: bool = True) -> None:
  """Raises ``ValueError`` unless ``state`` is a state of ``game`` (its ``init()``'s pytree,
  ``shape`` in front of every leaf) after both private deals, and (``terminal=False``) not
  terminal; a traced state is checked for structure and shape only."""
  name = game.game_string()
  template, facts = _state_facts(game)
  if jax.tree.structure(state) != jax.tree.structure(template):
    raise ValueError(f"{what} is not a state of {name} (the structure of its init()), got "
                     f"{type(state).__name__}")
  for got, want in zip(jax.tree.leaves(state), jax.tree.leaves(template)):
    if tuple(jnp.shape(got)) != tuple(shape) + tuple(want.shape):
      raise ValueError(f"{what}'s arrays must have shape {tuple(shape)} + the game's "
                       f"({tuple(want.shape)}), got {tuple(jnp.shape(got))}")
  if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(state)):
    return
  flat = jax.tree.map(lambda x: jnp.reshape(x, (-1,) + jnp.shape(x)[len(shape):]), state)
  dealt, player = (np.asarray(x) for x in facts(flat))
  if not np.all(dealt):
    raise ValueError(f"{what} of {name} must be a public state after both players' private "
                     "deals (private_index >= 0 for both; e.g. dealt_root(game)): its ranges "
                     "are over the private states")
  if not terminal and np.any(player == TERMINAL):
    raise ValueError(f"{what} of {name} is terminal: nothing to search")


def build_factored_tree(game: DeviceGame, *, root=None,
                        max_states: int = 1_000_000) -> FactoredTree:
  """The public tree of ``game`` on factored ranges (module docstring), expanded from its
  rules breadth first from ``root`` (a state after the private deals, any deal: its public
  state is what counts; default the game's first such state); ``ValueError`` if the game has
  no public/private factorisation, deals private information after the root, has over
  ``max_states`` public states below it (grow such a tree from the rules instead:
  :mod:`jaxgt.search.rules_source`) or public chance whose pairs' probabilities are too many
  to read (``K0 K1 C`` over :data:`PAIR_OUTCOME_LIMIT`: root such a game past its last chance
  node). Chance reach in the tree is relative to the root's public state."""
  check_factored(game, "build_factored_tree")
  if isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1:
    raise ValueError(f"max_states must be a positive integer, got {max_states!r}")
  K0, K1 = game.num_private
  with_chance = K0 * K1 * game.num_outcomes <= PAIR_OUTCOME_LIMIT
  describe = _describers(game, with_chance)
  if root is None:
    root = dealt_root(game)
  else:
    check_dealt_state(game, root)
    root = jax.tree.map(np.asarray, root)
  frontier = jax.tree.map(lambda x: np.asarray(x)[None], root)
  frontier_parent = np.full(1, -1, np.int32)
  frontier_action = np.full(1, -1, np.int32)
  frontier_z = np.ones(1)
  rows = []  # per level: dicts of NumPy arrays
  count = 0
  while True:
    n = len(frontier_parent)
    count += n
    if count > max_states:
      raise ValueError(f"{game.game_string()} has over {max_states} public states; raise "
                       "max_states or grow the tree from the rules (GT-CFR)")
    pad = _pow2(n)
    batch = jax.tree.map(lambda x: np.concatenate([x, np.repeat(x[:1], pad - n, 0)]), frontier)
    info, kids = describe(batch)
    info = {k: np.asarray(v)[:n] for k, v in info.items()}
    kids = jax.tree.map(lambda x: np.asarray(x)[:n], kids)
    if not with_chance and np.any(info["player"] == CHANCE):
      raise ValueError(f"{game.game_string()}: public chance below the root, whose private "
                       f"pairs' probabilities ({K0} x {K1} x {game.num_outcomes}) are too many "
                       "to read; root the tree after the last chance node")
    info.update(parent=frontier_parent, action=frontier_action, z=frontier_z, states=frontier)
    rows.append(info)
    src, act = np.nonzero(info["valid"])
    if not len(src):
      break
    chance_src = info["player"][src] == CHANCE
    if np.any(chance_src):  # public chance: each outcome its own public state
      pk = jax.vmap(game.public_key)(jax.tree.map(lambda x: x[src[chance_src], act[chance_src]],
                                                  kids))
      codes = key_codes(np.concatenate([src[chance_src, None], np.asarray(pk)], axis=1))
      if len(np.unique(codes)) != len(codes):
        raise ValueError(f"{game.game_string()} deals private information after the first "
                         "public state, so its ranges do not factor this way")
    base = count - n
    frontier = jax.tree.map(lambda x: x[src, act], kids)
    frontier_parent = (base + src).astype(np.int32)
    frontier_action = act.astype(np.int32)
    frontier_z = info["z"][src] * info["marg"][src, act]
  return _assemble(game, rows)


def _assemble(game: DeviceGame, rows: list) -> FactoredTree:
  cat = lambda k: np.concatenate([r[k] for r in rows])
  player, parent, action = cat("player").astype(np.int32), cat("parent"), cat("action")
  N, B, A = len(player), game.num_distinct, int(game.num_actions)
  levels, lo = [], 0
  for r in rows:
    levels.append((lo, lo + len(r["player"])))
    lo += len(r["player"])
  children = np.full((N, B), -1, np.int32)
  kid = np.flatnonzero(parent >= 0)
  children[parent[kid], action[kid]] = kid
  # own depth: each player's decisions above a state; decisions are numbered by it, so each
  # own depth is one contiguous block of rows
  own_depth = np.zeros((2, N), np.int32)
  for n in kid:  # breadth-first: parents come first
    own_depth[:, n] = own_depth[:, parent[n]] + (player[parent[n]] == np.arange(2))
  decisions, own_levels = [], []
  decision = np.full(N, -1, np.int32)
  for p in (0, 1):
    nodes = np.flatnonzero(player == p)
    nodes = nodes[np.lexsort((nodes, own_depth[p, nodes]))].astype(np.int32)
    decisions.append(nodes)
    decision[nodes] = np.arange(len(nodes), dtype=np.int32)
    depth = own_depth[p, nodes]
    bounds = np.searchsorted(depth, np.arange(int(depth.max()) + 2 if len(depth) else 1))
    own_levels.append(tuple((int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])))
  # the last own sequence (decision d, action a) = d A + a above each state; D_p A: the empty one
  last_seq = np.zeros((2, N), np.int32)
  for p in (0, 1):
    last_seq[p, 0] = len(decisions[p]) * A
  for n in kid:
    par = parent[n]
    last_seq[:, n] = last_seq[:, par]
    if player[par] in (0, 1):
      last_seq[player[par], n] = decision[par] * A + action[n]
  z = cat("z")
  terminals = np.flatnonzero(player == TERMINAL).astype(np.int32)
  payoff = None  # the game's terminal_values instead
  if "joint_util" in rows[0]:
    payoff = z[terminals, None, None] * cat("joint_util")[terminals]
  mass = (z[decisions[0], None] * cat("mass0")[decisions[0]],
          z[decisions[1], None] * cat("mass1")[decisions[1]])
  keys = (cat("keys0")[decisions[0]], cat("keys1")[decisions[1]])
  legal = tuple(cat("legal")[decisions[p]] for p in (0, 1))
  seq_parent = tuple(last_seq[p, decisions[p]] for p in (0, 1))
  states = jax.tree.map(lambda *xs: np.concatenate(xs), *[r["states"] for r in rows])
  groups = tuple(_terminal_groups(last_seq[p, terminals], len(decisions[p]) * A + 1)
                 for p in (0, 1))
  return FactoredTree(game=game, num_private=tuple(game.num_private), num_actions=A,
                      player=player, parent=parent, action=action, children=children,
                      levels=tuple(levels), decision=decision, decisions=tuple(decisions),
                      own_levels=tuple(own_levels), last_seq=last_seq, seq_parent=seq_parent,
                      terminal_groups=groups,
                      legal=legal, terminals=terminals, payoff=payoff, terminal_z=z[terminals],
                      chance_mass=mass,
                      info_keys=keys, public_keys=cat("pkey"), states=states)


def _terminal_groups(seqs: np.ndarray, num_seqs: int) -> tuple:
  """``(order, blocks, row)`` (:attr:`FactoredTree.terminal_groups`) of terminals at
  sequences ``seqs [T]``: a sum per sequence is then a reshape, a row sum and one gather, no
  scatter (on a CPU several times faster)."""
  counts = np.bincount(seqs, minlength=num_seqs)
  by_seq = np.argsort(seqs, kind="stable")
  starts = np.concatenate([[0], np.cumsum(counts)])
  order, blocks = [], []
  row = np.full(num_seqs, 0, np.int64)
  r = 0
  for c in np.unique(counts[counts > 0]):
    members = np.flatnonzero(counts == c)
    blocks.append((len(members), int(c)))
    for s in members:
      order.append(by_seq[starts[s]:starts[s + 1]])
    row[members] = r + np.arange(len(members))
    r += len(members)
  row[counts == 0] = r
  order = np.concatenate(order) if order else np.zeros(0, np.int64)
  return order.astype(np.int32), tuple(blocks), row.astype(np.int32)
