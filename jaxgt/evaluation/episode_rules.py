"""Logged episodes replayed through a game's rules (:mod:`jaxgt.games.device`).

A game too large to enumerate has no tree to locate a logged history in
(:mod:`jaxgt.evaluation.episode_paths`); :func:`check_episodes` replays each
history step by step through the rules instead, all lines at once in one jitted
program, and checks that every step is legal, that the history ends at a
terminal and that the logged returns are the rules' returns there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.evaluation.episode_paths import episode_name
from jaxgt.games.base import TERMINAL
from jaxgt.games.device import DeviceGame, children_mask

RETURNS_RTOL = 1e-6
"""Relative tolerance (of ``max(1, |logged|)``) between logged returns and the rules'."""


def replay(rules: DeviceGame, actions):
  """Replays ``actions [B, L]`` (int, -1 after the last step) through ``rules``.

  Returns ``(fail [B], terminal [B], returns [B, 2])``: the first step that is not legal
  where it is played (-1: none; a step after the game ended counts), whether the last step
  reached a terminal, and the rules' returns of the state reached.
  """
  n = rules.num_distinct

  def one(row):
    def body(carry, ta):
      s, fail = carry
      t, a = ta
      played = a >= 0
      ok = (a < n) & (rules.current_player(s) != TERMINAL) & children_mask(rules, s)[
          jnp.clip(a, 0, n - 1)]
      fail = jnp.where((fail < 0) & played & ~ok, t, fail)
      go = played & ok & (fail < 0)
      nxt = rules.step(s, jnp.clip(a, 0, n - 1))
      s = jax.tree_util.tree_map(lambda x, y: jnp.where(go, x, y), nxt, s)
      return (s, fail), None

    (s, fail), _ = jax.lax.scan(body, (rules.init(), jnp.int32(-1)),
                                (jnp.arange(row.shape[0], dtype=jnp.int32), row))
    return fail, rules.current_player(s) == TERMINAL, rules.returns(s)

  out = jax.jit(jax.vmap(one))(jnp.asarray(actions, jnp.int32))
  return tuple(np.asarray(x) for x in out)


def check_episodes(rules: DeviceGame, episodes) -> int:
  """Raises ``ValueError`` naming the line unless every fully observed episode of ``episodes``
  (:class:`~jaxgt.evaluation.episode_log.Episode` records) is a legal history of ``rules``
  from the root to a terminal whose returns are the logged ones; returns the number of
  episodes not replayed (those with an unobserved chance outcome, ``null``)."""
  full = [b for b, e in enumerate(episodes) if None not in e.history]
  if not full:
    return len(episodes)
  L = rules.max_length
  long = next((b for b in full if len(episodes[b].history) > L), None)
  if long is not None:
    e = episodes[long]
    raise ValueError(f"{episode_name(e, long)}: history has {len(e.history)} steps, longer than "
                     f"any history of {rules.game_string()} ({L}): a log for another game?")
  actions = np.full((len(full), L), -1, np.int64)
  for i, b in enumerate(full):
    actions[i, :len(episodes[b].history)] = episodes[b].history
  fail, terminal, got = replay(rules, actions)
  for i, b in enumerate(full):
    e = episodes[b]
    where = episode_name(e, b)
    if fail[i] >= 0:
      raise ValueError(f"{where}: step {int(fail[i])}: {e.history[fail[i]]} is not a legal "
                       f"action or chance outcome there, or the game is already over "
                       f"(history {list(e.history)})")
    if not terminal[i]:
      raise ValueError(f"{where}: history {list(e.history)} ends before the game does "
                       "(truncated)")
    logged = np.asarray(e.returns, np.float64)
    if np.any(np.abs(got[i] - logged) > RETURNS_RTOL * np.maximum(1.0, np.abs(logged))):
      raise ValueError(f"{where}: logged returns {list(e.returns)} are not the returns "
                       f"{got[i].tolist()} of history {list(e.history)} in "
                       f"{rules.game_string()}: a log for another game?")
  return len(episodes) - len(full)
