"""Rules as JAX programs: the device game protocol.

A :class:`DeviceGame` states its rules as pure functions over a fixed-shape
*state* pytree (any pytree of arrays; a flax ``struct.dataclass`` is usual),
so they jit, vmap over batches of states and run on any device. Chance is
explicit: a chance node gives its outcome probabilities and the caller picks
the outcome (samples it, enumerates every one, or conditions on a belief),
so exact chance reach is always at hand. Information states are identified
by collision-free integer keys, not hashes; public states by a key too, and
a game whose hidden information is a private part per player (cards, dice)
says so with private-state indices, so beliefs are ranges ``[K_p]``.

Shapes (one state; a batch adds leading axes through ``jax.vmap``):

==========================  =======================  =====================================
function                    returns                  meaning
==========================  =======================  =====================================
``init()``                  state                    the root
``current_player(s)``       int32 ``[]``             0, 1, :data:`CHANCE` or :data:`TERMINAL`
``legal_mask(s)``           bool ``[A]``             legal actions of the acting player;
                                                     all ``False`` at chance and terminals
``chance_probs(s)``         float ``[C]``            outcome probabilities at a chance node
                                                     (sum 1); zeros elsewhere
``step(s, a)``              state                    after action / outcome ``a``; a terminal
                                                     state is returned unchanged
``returns(s)``              float ``[2]``            utilities at a terminal (zero-sum);
                                                     zeros elsewhere
``info_key(s, p)``          int32 ``[W]``            player ``p``'s information state: equal
                                                     keys exactly when equal information
                                                     states (``p`` a Python int)
``info_features(s, p)``     float32 ``[F]``          the same information state for networks
``public_key(s)``           int32 ``[Wp]``           the public state (what both observe)
``public_features(s)``      float32 ``[Fp]``         the same for networks
``private_index(s, p)``     int32 ``[]``             ``p``'s private state in ``[0, K_p)``
                                                     (games with ``num_private``; -1 while
                                                     not yet dealt)
``private_chance(s)``       float ``[K0, K1]``       probability of each private pair given
                                                     the public chance events of ``s``
                                                     (sums to one; games with ``num_private``)
``with_private(s, p, k)``   state                    ``s`` with ``p``'s private state set to
                                                     ``k`` (the same public history under
                                                     another deal; games with ``num_private``)
``terminal_values(s,p,r)``  float ``[K_p]``          optional: at a terminal, ``sum_k'
                                                     private_chance(s)[k, k'] u_p(k, k')
                                                     r[k']`` for an opponent reach ``r
                                                     [K_o]``, faster than the ``[K0, K1]``
                                                     matrix (poker: sorting by strength)
``sample_chance(s, u)``     int32 ``[]``             optional: a chance outcome drawn from
                                                     ``chance_probs(s)`` by one uniform ``u``
                                                     in ``[0, 1)``; anything elsewhere
==========================  =======================  =====================================

``A = num_actions``, ``C = num_outcomes``, ``W = info_key_width``, ``Wp =
public_key_width``, ``F``/``Fp`` the feature sizes, ``K_p = num_private[p]``.
``max_length`` bounds the number of steps from the root to any terminal (chance
steps included), so fixed-length loops cover every trajectory. ``max_utility``
(optional) is the largest ``|returns(s)[p]|`` over terminals ``s``, exactly,
where the game knows it in closed form. Float outputs take JAX's default float
dtype (float64 under ``jax_enable_x64``; enumeration runs in float64).

``sample_chance`` is optional (:func:`has_chance_sampler`): a game whose chance nodes are wide
but simple (hold'em deals one of the cards left) draws an outcome without building ``[C]``
weights; the outcomes then split ``[0, 1)`` into sets of ``u`` of measure their
probabilities, at ``u``'s resolution of ``2^-24`` (a grid of ``2^24`` equally spaced ``u``
gives each outcome ``2^24 p`` of them, rounded up or down). Random playouts use it where the
game has it; :func:`jaxgt.games.check` compares it with ``chance_probs``.

Host side (one state whose leaves are NumPy arrays, or a key):
``info_string(key, p)`` turns an information-state key into its string
(OpenSpiel's string where the game mirrors one, so policies export exactly),
``public_name(key)`` a public key into a hashable name, ``action_string(a)``
names an action. Game strings, parameters, ``big_blind`` and
``public_actions`` come from :class:`~jaxgt.games.base.GameInfo`.

:func:`jaxgt.games.check` runs the conformance checks on sampled
trajectories; :func:`jaxgt.compile_game` enumerates a device game breadth
first, a whole frontier per step, into the static public-tree arrays.
"""

from __future__ import annotations

import abc
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.games.base import CHANCE, TERMINAL, GameInfo

State = Any
"""A pytree of fixed-shape arrays, chosen by each game."""


class DeviceGame(GameInfo, abc.ABC):
  """Rules as pure JAX functions over fixed-shape states (see the module docstring)."""

  num_outcomes: int = 0  # C: chance outcome ids are in [0, C)
  max_length: int = 0  # most steps from the root to a terminal
  info_key_width: int = 1  # W
  public_key_width: int = 1  # Wp
  info_feature_size: int = 0  # F
  public_feature_size: int = 0  # Fp
  num_private: tuple[int, int] | None = None  # (K0, K1) where the game factors
  # the largest absolute utility of any terminal, where known in closed form (else None); e.g.
  # the default exploration constant of UCT-style searches (twice it) on games too large to
  # enumerate
  max_utility: float | None = None

  # --- device functions -------------------------------------------------------------------
  @abc.abstractmethod
  def init(self) -> State:
    """The root state."""

  @abc.abstractmethod
  def current_player(self, state: State):
    """int32 ``[]``: 0, 1, :data:`CHANCE` or :data:`TERMINAL`."""

  @abc.abstractmethod
  def legal_mask(self, state: State):
    """bool ``[A]``: the acting player's legal actions (all ``False`` unless 0 or 1 acts)."""

  @abc.abstractmethod
  def chance_probs(self, state: State):
    """float ``[C]``: outcome probabilities at a chance node, zeros elsewhere."""

  @abc.abstractmethod
  def step(self, state: State, action) -> State:
    """The state after action (or chance outcome) ``action``; terminals are unchanged."""

  @abc.abstractmethod
  def returns(self, state: State):
    """float ``[2]``: utilities at a terminal, zeros elsewhere."""

  @abc.abstractmethod
  def info_key(self, state: State, player: int):
    """int32 ``[W]``: player ``player``'s information state, losslessly encoded."""

  def info_features(self, state: State, player: int):
    """float32 ``[F]``: the information state as network input."""
    raise NotImplementedError(f"{self.name} defines no information-state features")

  @abc.abstractmethod
  def public_key(self, state: State):
    """int32 ``[Wp]``: the public state, losslessly encoded."""

  def public_features(self, state: State):
    """float32 ``[Fp]``: the public state as network input."""
    raise NotImplementedError(f"{self.name} defines no public-state features")

  def private_index(self, state: State, player: int):
    """int32 ``[]``: ``player``'s private state in ``[0, K_p)`` (-1 before it is dealt)."""
    raise NotImplementedError(f"{self.name} has no public/private factorisation")

  def private_chance(self, state: State):
    """float ``[K0, K1]``: probability of each pair of private states given the public chance
    events so far (the chance reach of the deals, normalised over the pairs)."""
    raise NotImplementedError(f"{self.name} has no public/private factorisation")

  def with_private(self, state: State, player: int, k):
    """``state`` with ``player``'s private state replaced by ``k`` (int ``[]`` in ``[0,
    K_p)``): the same public history under another deal (a pair that cannot be dealt there
    has zero :meth:`private_chance`)."""
    raise NotImplementedError(f"{self.name} has no public/private factorisation")

  def terminal_values(self, state: State, player: int, opp_reach):
    """Optional, float ``[K_p]``: at a terminal ``state``, ``sum_k' private_chance(state)[k, k']
    u(k, k') opp_reach[k']`` with ``u`` ``player``'s utility holding ``k`` against the
    opponent's ``k'``; where a game defines it, the factored public tree
    (:mod:`jaxgt.core.factored`) calls it instead of building ``[K0, K1]`` payoff matrices."""
    raise NotImplementedError(f"{self.name} defines no terminal_values")

  def sample_chance(self, state: State, u):
    """int32 ``[]``: a chance outcome drawn from :meth:`chance_probs` by one uniform ``u``
    (float ``[]`` in ``[0, 1)``) at a chance node; any value elsewhere. Optional (see
    :func:`has_chance_sampler`): games without it are sampled from their ``chance_probs``."""
    raise NotImplementedError(f"{self.name} defines no chance sampler")

  # --- host functions ---------------------------------------------------------------------
  @abc.abstractmethod
  def info_string(self, key, player: int) -> str:
    """The information-state string of key ``key`` (``[W]`` ints) for ``player``."""

  def public_name(self, key) -> Any:
    """A hashable name of public key ``key`` (default: the key's ints as a tuple)."""
    return tuple(int(k) for k in np.asarray(key).reshape(-1))

  @property
  def num_distinct(self) -> int:
    """``max(A, C)``: the width of ``step``'s action argument."""
    return max(int(self.num_actions), int(self.num_outcomes))


def children_mask(game: DeviceGame, state: State):
  """bool ``[max(A, C)]``: the actions (player) or outcomes (chance) with a child."""
  n = game.num_distinct
  legal = jnp.zeros(n, bool).at[:game.num_actions].set(game.legal_mask(state))
  probs = jnp.zeros(n).at[:game.num_outcomes].set(game.chance_probs(state)) if game.num_outcomes \
      else jnp.zeros(n)
  return jnp.where(game.current_player(state) == CHANCE, probs > 0, legal)


def has_chance_sampler(game) -> bool:
  """Whether ``game`` (a :class:`DeviceGame`) defines :meth:`DeviceGame.sample_chance`."""
  return isinstance(game, DeviceGame) and type(game).sample_chance is not DeviceGame.sample_chance


def uniform_grid_index(u, n):
  """int32 ``[]``: ``floor(floor(u 2^24) n / 2^24)`` in ``[0, n)`` for ``u`` in ``[0, 1)``
  and ``1 <= n < 2^8``: the index of ``u`` among ``n`` equal parts of ``[0, 1)`` on ``u``'s
  grid of ``2^24`` points, in integers (a float ``u * n`` can round up to the next part),
  so each part gets ``2^24 / n`` grid points rounded up or down. For samplers of uniform
  chance nodes."""
  m = jnp.floor(jnp.asarray(u, jnp.float32) * jnp.float32(1 << 24)).astype(jnp.uint32)
  n = jnp.asarray(n, jnp.int32)
  return jnp.minimum(((m * n.astype(jnp.uint32)) >> 24).astype(jnp.int32), n - 1)


def is_terminal(game: DeviceGame, state: State):
  """bool ``[]``."""
  return game.current_player(state) == TERMINAL


def key_codes(rows) -> np.ndarray:
  """``[N]`` codes of integer rows ``[N, W]`` (keys), equal exactly for equal rows: a mixed-radix
  int64 over the columns' observed ranges when it fits in 62 bits (NumPy sorts those fast),
  else the rows' bytes."""
  rows = np.asarray(rows, np.int64).reshape(len(rows), -1)
  if not len(rows):
    return np.zeros(0, np.int64)
  lo, hi = rows.min(axis=0), rows.max(axis=0)
  span = hi - lo + 1
  if np.sum(np.log2(span.astype(np.float64))) < 62:
    code = np.zeros(len(rows), np.int64)
    for c in range(rows.shape[1]):
      code = code * span[c] + (rows[:, c] - lo[c])
    return code
  rows = np.ascontiguousarray(rows)
  return rows.view(np.dtype((np.void, 8 * rows.shape[1]))).reshape(-1)


def host_state(state: State) -> State:
  """``state`` with NumPy leaves (for the host-side functions)."""
  return jax.tree_util.tree_map(np.asarray, jax.device_get(state))


def checked_step(game: DeviceGame, state: State, action: int) -> State:
  """``game.step(state, action)`` on the host, after checking that ``action`` is legal there
  (a legal action of the acting player, an outcome of positive probability at chance);
  ``ValueError`` naming the state's player and its legal actions otherwise. For scripts and
  tests that drive a game by hand: jitted code draws its actions from the masks instead."""
  player = int(game.current_player(state))
  if player == TERMINAL:
    raise ValueError(f"{game.game_string()}: no action is legal at a terminal state")
  if player == CHANCE:
    allowed = np.flatnonzero(np.asarray(game.chance_probs(state)) > 0)
    what = "chance outcome"
  else:
    allowed = np.flatnonzero(np.asarray(game.legal_mask(state)))
    what = f"action of player {player}"
  if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or \
     int(action) not in allowed:
    names = ", ".join(f"{int(a)} ({game.action_string(int(a))})" if player != CHANCE
                      else str(int(a)) for a in allowed)
    raise ValueError(f"{game.game_string()}: {action!r} is not a legal {what} here; "
                     f"legal: {names}")
  return game.step(state, jnp.int32(action))
