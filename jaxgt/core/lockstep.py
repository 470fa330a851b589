"""Sampled trajectories of a :class:`~jaxgt.games.device.DeviceGame` replayed in OpenSpiel.

:func:`lockstep` samples trajectories through the device rules
(:func:`jaxgt.core.playout.trajectories`: players uniform over legal actions,
chance by its probabilities), replays them in one batched scan that records
every state's player, legal mask, chance probabilities and both players'
information-state keys, and then plays the same actions in ``pyspiel`` one
state at a time, comparing at each state the player to act, the legal actions
(decisions) or chance outcomes and probabilities (chance nodes), both
players' information-state strings (where OpenSpiel provides them), and the
returns at the end. Key strings are decoded once per distinct key.

Simultaneous-move games are compared against OpenSpiel's
``turn_based_simultaneous_game`` form, which is what a device game's
``openspiel_game_string()`` names.
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import PROB_ATOL, check_positive_int
from jaxgt.core import playout
from jaxgt.core.tree_rules import rules_of
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame
from jaxgt.games.openspiel_import import load_pyspiel_game, pyspiel_module

CHUNK = 4096
"""Trajectories recorded per jitted call (the last chunk padded, so it compiles once)."""
EXAMPLES = 10
"""Mismatches reported in full."""


@functools.partial(jax.jit, static_argnums=0)
def _record(game: DeviceGame, actions):
  """Replays ``actions [B, L]`` (``-1`` after the end) and records, per state ``[B, L + 1]``:
  player, legal mask ``[A]``, chance probabilities ``[C]``, info keys ``[W]`` of both players;
  and the final returns ``[B, 2]``."""
  def one(acts):
    def body(s, a):
      probs = game.chance_probs(s) if game.num_outcomes else jnp.zeros(0)
      out = (game.current_player(s), game.legal_mask(s), probs, game.info_key(s, 0),
             game.info_key(s, 1))
      nxt = game.step(s, jnp.maximum(a, 0))
      s = jax.tree_util.tree_map(lambda x, y: jnp.where(a >= 0, y, x), s, nxt)
      return s, out
    acts = jnp.concatenate([acts, jnp.full(1, -1, acts.dtype)])
    s, rec = jax.lax.scan(body, game.init(), acts)
    return rec, game.returns(s)
  return jax.vmap(one)(actions)


def record(game: DeviceGame, actions: np.ndarray) -> dict:
  """NumPy records of at most :data:`CHUNK` trajectories ``actions [N, L]`` (see
  :func:`_record`; one padded call): ``player [N, L+1]``, ``legal [N, L+1, A]``,
  ``chance [N, L+1, C]``, ``keys`` (two ``[N, L+1, W]``), ``returns [N, 2]``."""
  n = len(actions)
  if not 0 < n <= CHUNK:
    raise ValueError(f"record takes 1 to {CHUNK} trajectories at a time, got {n}")
  idx = np.minimum(np.arange(CHUNK), n - 1)
  (p, legal, chance, k0, k1), ret = jax.device_get(
      _record(game, jnp.asarray(actions[idx], jnp.int32)))
  p, legal, chance, k0, k1, ret = (np.asarray(x)[:n] for x in (p, legal, chance, k0, k1, ret))
  return {"player": p, "legal": legal, "chance": chance, "keys": (k0, k1), "returns": ret}


class _Strings:
  """``info_string`` of each distinct key, decoded once."""

  def __init__(self, game: DeviceGame, player: int):
    self.game, self.player, self.cache = game, player, {}

  def __call__(self, key: np.ndarray) -> str:
    b = key.tobytes()
    s = self.cache.get(b)
    if s is None:
      s = self.cache[b] = self.game.info_string(key, self.player)
    return s


def load_openspiel(openspiel_game: str):
  """The ``pyspiel`` game named by ``openspiel_game`` (``ValueError`` when OpenSpiel cannot
  load it or it is not a two-player game)."""
  pyspiel = pyspiel_module()
  os_game = load_pyspiel_game(openspiel_game)
  if os_game.num_players() != 2:
    raise ValueError(f"{openspiel_game}: {os_game.num_players()} players; jaxgt games have 2")
  gtype = os_game.get_type()
  if gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
    raise ValueError(f"{openspiel_game} is a simultaneous-move game; jaxgt plays its moves in "
                     f"turn: compare with turn_based_simultaneous_game(game={openspiel_game})")
  return os_game


def lockstep(game: DeviceGame, openspiel_game: str, *, trajectories: int, seed: int,
             atol: float = PROB_ATOL) -> dict:
  """Plays ``trajectories`` sampled trajectories of ``game`` (a device game, or a compiled
  game read through its ``rules()``) in OpenSpiel game ``openspiel_game`` (module doc).

  Returns :func:`replay`'s report of the actions of
  ``jaxgt.core.playout.trajectories(game, PRNGKey(seed), trajectories)``.
  """
  n = check_positive_int("trajectories", trajectories)
  game = rules_of(game)
  load_openspiel(openspiel_game)  # a bad name is refused before sampling
  t0 = time.perf_counter()
  actions = np.asarray(jax.device_get(
      playout.trajectories(game, jax.random.PRNGKey(seed), n)[1]))
  report = replay(game, openspiel_game, actions, atol=atol)
  report["seconds"] = time.perf_counter() - t0
  return report


def replay(game: DeviceGame, openspiel_game: str, actions, *, atol: float = PROB_ATOL) -> dict:
  """Plays given trajectories ``actions [N, L]`` (ints, ``-1`` after the end, ``L <=
  max_length``) of ``game`` and of OpenSpiel game ``openspiel_game`` side by side.

  Returns ``{"game", "openspiel", "trajectories", "states" (compared), "mismatches",
  "mismatched_trajectories", "examples", "seconds"}``; each of the first :data:`EXAMPLES`
  mismatches as ``{"trajectory", "step", "actions" (before the step), "what", "ours",
  "theirs"}``. A trajectory stops at a mismatch of player, legal actions or chance outcomes
  (the states after it are not comparable; an action our rules do not allow there is a
  ``legal_actions`` or ``chance_outcomes`` mismatch); strings agree exactly, probabilities and
  returns within ``atol``. Constant-sum OpenSpiel returns are shifted to zero sum as jaxgt's
  importer does. Trajectories are recorded and replayed :data:`CHUNK` at a time.
  """
  game = rules_of(game)
  acts = np.asarray(actions)
  if acts.ndim != 2 or not len(acts) or not np.issubdtype(acts.dtype, np.integer) or \
     acts.shape[1] > game.max_length:
    raise ValueError(f"actions must be a non-empty [N, L] integer array with L <= max_length="
                     f"{game.max_length}, got {acts.dtype} {acts.shape}")
  acts = np.concatenate([acts, np.full((len(acts), game.max_length - acts.shape[1]), -1,
                                       acts.dtype)], axis=1).astype(np.int32)
  rep = _Replay(game, load_openspiel(openspiel_game), atol)
  t0 = time.perf_counter()
  for lo in range(0, len(acts), CHUNK):
    part = acts[lo:lo + CHUNK]
    rep.chunk(record(game, part), part.tolist(), lo)
  return {"game": game.game_string(), "openspiel": openspiel_game, "trajectories": len(acts),
          "states": rep.states, "mismatches": rep.mismatches,
          "mismatched_trajectories": len(rep.bad), "examples": rep.examples,
          "seconds": time.perf_counter() - t0}


class _Replay:
  """The OpenSpiel side: replays recorded trajectories and tallies the mismatches."""

  def __init__(self, game: DeviceGame, os_game, atol: float):
    pyspiel = pyspiel_module()
    gtype = os_game.get_type()
    self.os_game, self.atol, self.max_length = os_game, atol, game.max_length
    self.error = pyspiel.SpielError
    self.shift = (float(os_game.utility_sum()) / 2.0
                  if gtype.utility == pyspiel.GameType.Utility.CONSTANT_SUM else 0.0)
    self.strings = gtype.provides_information_state_string
    self.decode = (_Strings(game, 0), _Strings(game, 1))
    self.states, self.mismatches, self.bad, self.examples = 0, 0, set(), []

  def miss(self, b, t, acts, what, ours, theirs):
    self.mismatches += 1
    self.bad.add(b)
    if len(self.examples) < EXAMPLES:
      self.examples.append({"trajectory": b, "step": t, "actions": acts[:t], "what": what,
                            "ours": ours, "theirs": theirs})

  def chunk(self, rec: dict, actions: list, first: int) -> None:
    """Replays trajectories ``first + i`` (``actions[i]``, records ``rec``)."""
    for i, (players, acts) in enumerate(zip(rec["player"].tolist(), actions)):
      self.trajectory(rec, i, first + i, players, acts)

  def trajectory(self, rec: dict, i: int, b: int, players: list, acts: list) -> None:
    st = self.os_game.new_initial_state()
    for t, p in enumerate(players):
      self.states += 1
      theirs = st.current_player()
      if p != theirs:
        return self.miss(b, t, acts, "player", p, theirs)
      if p == TERMINAL:
        ours = [float(x) for x in rec["returns"][i]]
        got = [float(x) - self.shift for x in st.returns()]
        if not np.allclose(ours, got, rtol=0.0, atol=self.atol):
          self.miss(b, t, acts, "returns", ours, got)
        return None
      if p == CHANCE:
        probs = rec["chance"][i, t]
        ours = np.flatnonzero(probs > 0).tolist()
        pairs = st.chance_outcomes()
        if ours != [a for a, _ in pairs]:
          return self.miss(b, t, acts, "chance_outcomes", ours, [a for a, _ in pairs])
        got = [q for _, q in pairs]
        if not np.allclose(probs[ours], got, rtol=0.0, atol=self.atol):
          self.miss(b, t, acts, "chance_probabilities", probs[ours].tolist(), got)
      else:
        ours = np.flatnonzero(rec["legal"][i, t]).tolist()
        got = st.legal_actions()
        if ours != got:
          return self.miss(b, t, acts, "legal_actions", ours, got)
      if self.strings:
        for q in (0, 1):
          try:
            got = st.information_state_string(q)
          except self.error:  # OpenSpiel gives none in this state
            continue
          mine = self.decode[q](rec["keys"][q][i, t])
          if mine != got:
            self.miss(b, t, acts, f"info_string_p{q}", mine, got)
      if t == len(acts):
        return self.miss(b, t, acts, "length",
                         f"not terminal after max_length={self.max_length} steps", "not terminal")
      a = acts[t]
      if a < 0:  # a given trajectory that stops before the end
        return None
      if a not in ours:
        raise ValueError(f"trajectory {b}: action {a} at step {t} (after {acts[:t]}) is not "
                         f"among the legal actions or chance outcomes {ours}")
      st.apply_action(a)
    return None
