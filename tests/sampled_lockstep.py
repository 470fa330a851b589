"""Sampled lockstep with OpenSpiel for games too large to enumerate.

Random trajectories of a device game (:func:`jaxgt.core.playout.trajectories`) are read back
through the rules (player, legal mask, chance probabilities, both players' keys, returns at
every step, one vmapped scan) and replayed in ``pyspiel``, comparing legal actions, chance
outcomes and probabilities, both players' information-state strings (keys decoded by
``info_string``) and returns. Runs under float64, so probabilities compare exactly.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.playout import trajectories
from jaxgt.games.base import CHANCE, TERMINAL


@functools.partial(jax.jit, static_argnums=0)
def _reads(game, actions):
  def one(acts):
    def read(s):
      probs = game.chance_probs(s) if game.num_outcomes else jnp.zeros(0)
      return (game.current_player(s), game.legal_mask(s), probs, game.info_key(s, 0),
              game.info_key(s, 1), game.returns(s))

    def body(s, a):
      nxt = game.step(s, jnp.maximum(a, 0))
      return jax.tree_util.tree_map(lambda x, y: jnp.where(a >= 0, y, x), s, nxt), read(s)

    s, per_step = jax.lax.scan(body, game.init(), acts)
    return per_step, read(s)
  return jax.vmap(one)(actions)


def sampled_lockstep(game, os_game, *, trajectories_count: int, seed: int) -> dict:
  """Replays ``trajectories_count`` random trajectories of ``game`` in ``os_game``; raises
  ``AssertionError`` listing the first mismatches. Returns ``{"steps", "terminals"}``."""
  with jax.enable_x64(True):
    _, acts, last = jax.device_get(trajectories(game, jax.random.PRNGKey(seed),
                                                trajectories_count))
    per_step, final = jax.device_get(_reads(game, acts))
  player, mask, probs, k0, k1, _ = (np.asarray(x) for x in per_step)
  f_player, _, _, f0, f1, f_ret = (np.asarray(x) for x in final)
  names = {}

  def name(key, q):
    k = (q,) + tuple(int(x) for x in key)
    if k not in names:
      names[k] = game.info_string(key, q)
    return names[k]

  bad, steps = [], 0
  for b in range(len(acts)):
    st = os_game.new_initial_state()
    path = []
    for t in range(acts.shape[1] + 1):
      a = int(acts[b, t]) if t < acts.shape[1] else -1
      p = int(player[b, t]) if a >= 0 else int(f_player[b])
      keys = (k0[b, t], k1[b, t]) if a >= 0 else (f0[b], f1[b])
      where = f"trajectory {b} after {path}"
      if p != st.current_player():
        bad.append(f"{where}: player {p}, OpenSpiel {st.current_player()}")
        break
      for q in (0, 1):
        if name(keys[q], q) != st.information_state_string(q):
          bad.append(f"{where}: player {q}'s information state {name(keys[q], q)!r}, "
                     f"OpenSpiel {st.information_state_string(q)!r}")
      if a < 0:
        if not st.is_terminal():
          bad.append(f"{where}: terminal here, not in OpenSpiel")
        elif tuple(float(u) for u in f_ret[b]) != tuple(st.returns()):
          bad.append(f"{where}: returns {tuple(f_ret[b])}, OpenSpiel {st.returns()}")
        break
      if p == CHANCE:
        ours = [(int(o), float(probs[b, t, o])) for o in np.flatnonzero(probs[b, t] > 0)]
        if ours != [(int(o), float(q)) for o, q in st.chance_outcomes()]:
          bad.append(f"{where}: chance outcomes {ours}, OpenSpiel {st.chance_outcomes()}")
      elif [int(x) for x in np.flatnonzero(mask[b, t])] != list(st.legal_actions()):
        bad.append(f"{where}: legal actions {np.flatnonzero(mask[b, t]).tolist()}, "
                   f"OpenSpiel {st.legal_actions()}")
      st.apply_action(a)
      path.append(a)
      steps += 1
    if len(bad) >= 5:
      break
  assert not bad, "\n".join(bad[:5])
  return {"steps": steps, "terminals": int(np.sum(np.asarray(last) == TERMINAL))}
