"""A search position on a device game: what the searcher has observed, and what agrees with it.

On a compiled tree a search reads the histories of the searcher's information
state off the tree (:mod:`jaxgt.core.targets`). A game given by its rules has
no such list; what the searcher knows is the sequence of its own
information-state keys along the match (and the public keys), one per step
from the root. :func:`search_path` replays a match's actions once to record
them (:func:`check_targeting` refuses public-subgame targeting of a game without public
actions); from it:

* :func:`consistent_children` marks, at any state of a walk at depth ``t``,
  the children whose searcher key (IST) or public key (PST) equals the match's
  at depth ``t + 1``: the part of the game a targeted trajectory stays in
  (Lisy, Lanctot, Bowling, "Online Monte Carlo Counterfactual Regret
  Minimization for Search in Imperfect Information Games", 2015, Sec. 4.1-4.2);
* :func:`sample_information_state` draws states of the searcher's
  information state by walking from the root through consistent children
  only (chance by its probabilities, players uniformly among the consistent
  actions): ISMCTS's determinization (Cowling, Powley, Whitehouse 2012).

Both assume what every game of the zoo satisfies: a player's key at depth ``t``
is determined by its key at any later depth of the same trajectory (the game
is timed and of perfect recall in what it shows). A game that forgets (the
hold'em keys show the board as a set) loses the histories whose cards came in
another order from the targeted set; targeting stays sound (any targeted set
is, Sec. 4), it only narrows the set.

Sampled states of an information state are drawn with probability proportional
to their chance reach times the uniform choices among consistent actions along
the way; where the players' actions are public (poker, Liar's Dice) that is the
chance reach, as on a compiled tree (where they are hidden, as in II-Goofspiel,
a history is weighted by one over the number of consistent actions at each of
its decisions). A walk through consistent children proposes a state with
probability its chance reach divided by its *weight*, the product of the
consistent chance mass at each chance step. In the games here the weight
differs between states only where chance outcomes come in copies (Leduc with
suit isomorphism, Generic Poker: a rank the opponent holds leaves fewer copies
of it for the board). Each proposal is accepted with probability its weight
over the largest weight (:func:`information_state_bound`: the largest among a
pool of proposals), the rest walk again (rejection sampling, exact once the
bound is the largest weight).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxgt import struct
from jaxgt.core import rng
from jaxgt.games.base import CHANCE
from jaxgt.games.device import DeviceGame, children_mask


@struct.dataclass
class SearchPath:
  """The searcher's view of a match position (``L = max_length``)."""

  keys: jax.Array  # [L + 1, W] int32 the searcher's information-state key at each depth
  public: jax.Array  # [L + 1, Wp] int32 the public key at each depth
  length: jax.Array  # [] int32 steps from the root to the position (-1: no position)
  player: jax.Array  # [] int32 the player acting at the position (the searcher)


def _both_keys(game: DeviceGame, state):
  return jnp.stack([jnp.asarray(game.info_key(state, p), jnp.int32) for p in (0, 1)])


def search_path(game: DeviceGame, actions, length) -> SearchPath:
  """The :class:`SearchPath` of the match position reached by ``actions [L]`` (chance outcomes
  included; ``-1`` padding) after ``length`` steps (traceable; ``length < 0``: no position)."""
  L = int(game.max_length)
  actions = jnp.asarray(actions, jnp.int32)
  length = jnp.asarray(length, jnp.int32)

  def body(t, c):
    s, keys, pub = c
    keys = keys.at[t].set(_both_keys(game, s))
    pub = pub.at[t].set(jnp.asarray(game.public_key(s), jnp.int32))
    s = jax.tree_util.tree_map(lambda n, o: jnp.where(t < length, n, o),
                               game.step(s, jnp.maximum(actions[jnp.minimum(t, L - 1)], 0)), s)
    return s, keys, pub

  s0 = game.init()
  k0, p0 = _both_keys(game, s0), jnp.asarray(game.public_key(s0), jnp.int32)
  s, keys, pub = lax.fori_loop(0, L + 1, body, (
      s0, jnp.zeros((L + 1,) + k0.shape, jnp.int32), jnp.zeros((L + 1,) + p0.shape, jnp.int32)))
  player = jnp.where(length >= 0, jnp.asarray(game.current_player(s), jnp.int32), -1)
  mine = jnp.where(player == 1, keys[:, 1], keys[:, 0])
  return SearchPath(keys=mine, public=pub, length=length, player=player)


def check_targeting(game: DeviceGame, targeting: str) -> None:
  """Raises ``ValueError`` for public-subgame targeting (``"pst"``) of a game without public
  actions (``game.public_actions`` false): every history then has the same public actions, so
  the game has no public subgame to target (Lisy, Lanctot, Bowling, "Online Monte Carlo
  Counterfactual Regret Minimization for Search in Imperfect Information Games", 2015,
  Sec. 4.2)."""
  if targeting == "pst" and not getattr(game, "public_actions", None):
    raise ValueError(f"{game.game_string()} has no public actions, so no public subgame to "
                     "target (Lisy, Lanctot, Bowling 2015, Sec. 4.2): use targeting='ist'")


def check_search_path(game: DeviceGame, path) -> SearchPath:
  """``path`` checked against ``game``: a :class:`SearchPath` with keys ``[L + 1, W]`` and
  public keys ``[L + 1, Wp]`` (``L = game.max_length``), and, where its values are concrete, a
  length in ``[-1, L]`` and a searcher 0 or 1 at a position (``TypeError``, ``ValueError``)."""
  if not isinstance(path, SearchPath):
    raise TypeError(f"path must be a SearchPath (jaxgt.solvers.consistent.search_path), got "
                    f"{type(path).__name__}")
  L = int(game.max_length)
  want = {"keys": (L + 1, int(game.info_key_width)),
          "public": (L + 1, int(game.public_key_width))}
  for name, shape in want.items():
    got = tuple(jnp.shape(getattr(path, name)))
    if got != shape:
      raise ValueError(f"path.{name} has shape {got}; {game.game_string()} needs {shape} "
                       f"(a path of another game?)")
  if not any(isinstance(x, jax.core.Tracer) for x in (path.length, path.player)):
    length, player = int(path.length), int(path.player)
    if not -1 <= length <= L:
      raise ValueError(f"path.length must be in [-1, {L}], got {length}")
    if length >= 0 and player not in (0, 1):
      raise ValueError(f"no player acts at the path's position (player {player}): it is not a "
                       f"decision, and a search position is a decision of player 0 or 1")
  return path


def no_path(game: DeviceGame) -> SearchPath:
  """The :class:`SearchPath` of no position (a search from the root, nothing targeted)."""
  return search_path(game, jnp.full(game.max_length, -1, jnp.int32), -1)


def consistent_children(game: DeviceGame, states, depth, path: SearchPath,
                        targeting: str = "ist"):
  """bool ``[B, C]``: the children of states ``[B]`` at ``depth`` (``[]`` or ``[B]``) that
  agree with ``path``: their searcher key (``"ist"``) or public key (``"pst"``) equals the
  match's at ``depth + 1``; every child once ``depth`` reaches the position, and none that
  does not exist. With no position (``path.length < 0``) every child agrees."""
  C = int(game.num_distinct)
  depth = jnp.broadcast_to(jnp.asarray(depth, jnp.int32), jax.tree_util.tree_leaves(
      states)[0].shape[:1])
  nxt = jnp.minimum(depth + 1, path.keys.shape[0] - 1)

  def one(s, t):
    exists = children_mask(game, s)
    kids = jax.vmap(lambda a: game.step(s, a))(jnp.arange(C, dtype=jnp.int32))
    if targeting == "ist":
      k = jax.vmap(lambda c: _both_keys(game, c))(kids)  # [C, 2, W]
      k = jnp.where(path.player == 1, k[:, 1], k[:, 0])
      same = jnp.all(k == path.keys[t], axis=-1)
    else:
      k = jax.vmap(lambda c: jnp.asarray(game.public_key(c), jnp.int32))(kids)
      same = jnp.all(k == path.public[t], axis=-1)
    return exists & same

  agree = jax.vmap(one)(states, nxt)
  free = (path.length < 0) | (depth >= path.length)
  exists = jax.vmap(lambda s: children_mask(game, s))(states)
  return jnp.where(free[:, None], exists, agree)


REJECTION_ROUNDS = 32
"""Most walks a lane of :func:`sample_information_state` retries after a rejection."""

BOUND_POOL = 256
"""Proposals :func:`information_state_bound` walks to find the largest weight."""


def information_state_bound(game: DeviceGame, path: SearchPath, key=None,
                            pool: int = BOUND_POOL):
  """float32 ``[]``: the log of the largest weight (consistent chance mass along the walk)
  among ``pool`` proposals of :func:`sample_information_state` at ``path`` (``key=None``: a
  fixed key); the bound its rejection step divides by. ``-inf`` where no proposal got
  through."""
  key = jax.random.key(0) if key is None else key
  _, good, logw, _ = _walk_consistent(game, path, key, pool)
  return jnp.max(jnp.where(good, logw, -jnp.inf))


def sample_information_state(game: DeviceGame, path: SearchPath, key, batch: int,
                             log_bound=None):
  """``(states [B], ok [B])``: ``batch`` states of the searcher's information state at
  ``path`` (the root where there is no position), drawn in proportion to their chance
  reach where the players' actions are public (see the module docstring).

  Each lane walks from the root through consistent children (chance by its probabilities
  restricted to them, players uniformly among them) and is accepted with probability
  ``exp(weight - log_bound)`` (``log_bound``: :func:`information_state_bound`, computed once
  per position; ``None``: the largest weight among this call's first walks, exact only when
  they include a state of the largest weight). A lane that meets a state with no consistent
  child (card removal: a card the searcher holds dealt to the opponent earlier) or is
  rejected walks again, up to :data:`REJECTION_ROUNDS` times; ``ok`` is false for a lane
  that never got through."""

  def accept(good, logw, u, bound):
    return good & (u < jnp.exp(logw - bound))

  def cond(c):
    r, _, ok = c
    return (r < REJECTION_ROUNDS) & ~jnp.all(ok)

  def body(c):
    r, states, ok = c
    s, good, logw, u = _walk_consistent(game, path, rng.fold_in(key, r), batch)
    take = ~ok & accept(good, logw, u, bound)
    states = jax.tree_util.tree_map(
        lambda n, o: jnp.where(take.reshape(take.shape + (1,) * (n.ndim - 1)), n, o), s, states)
    return r + 1, states, ok | take

  s, good, logw, u = _walk_consistent(game, path, rng.fold_in(key, 0), batch)
  bound = jnp.max(jnp.where(good, logw, -jnp.inf)) if log_bound is None else log_bound
  return lax.while_loop(cond, body, (jnp.int32(1), s, accept(good, logw, u, bound)))[1:]


def _walk_consistent(game: DeviceGame, path: SearchPath, key, batch: int):
  """One walk per lane for :func:`sample_information_state`: ``(states [B], ok [B], log
  weight [B], acceptance uniform [B])``."""
  L = int(game.max_length)
  C = int(game.num_distinct)
  states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)),
                                  game.init())
  uni = rng.uniform(key, (L + 1, batch))

  def body(t, c):
    s, ok, logw = c
    mask = consistent_children(game, s, t, path)
    player = jax.vmap(game.current_player)(s)
    chance = player == CHANCE
    probs = jax.vmap(lambda x: jnp.pad(game.chance_probs(x), (0, C - game.num_outcomes)))(s) \
        if game.num_outcomes else jnp.zeros((batch, C))
    w = jnp.where(chance[:, None], probs, 1.0) * mask
    total = jnp.sum(w, axis=-1)
    cdf = jnp.cumsum(w, axis=-1)
    a = jnp.sum(cdf <= (uni[t] * total)[:, None], axis=-1).astype(jnp.int32)
    a = jnp.minimum(a, C - 1)
    go = (t < path.length) & (total > 0)
    ok = ok & ((t >= path.length) | (total > 0))
    # the consistent chance mass (chance probabilities sum to one)
    logw = logw + jnp.where(go & chance, jnp.log(jnp.where(total > 0, total, 1.0)), 0.0).astype(
        jnp.float32)
    nxt = jax.vmap(game.step)(s, a)
    s = jax.tree_util.tree_map(
        lambda n, o: jnp.where(go.reshape(go.shape + (1,) * (n.ndim - 1)), n, o), nxt, s)
    return s, ok, logw

  # Steps from the position on change nothing: walk only up to it.
  steps = jnp.clip(jnp.asarray(path.length, jnp.int32), 0, L)
  s, ok, logw = lax.fori_loop(0, steps, body, (states, jnp.ones(batch, bool),
                                               jnp.zeros(batch, jnp.float32)))
  return s, ok, logw, uni[L]
