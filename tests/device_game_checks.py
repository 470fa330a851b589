"""Checks of a device game's features and public/private factorisation against its compiled tree."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.games.base import TERMINAL


def replay(game, compiled):
  """The device state of every history of ``compiled`` (its action path replayed through
  ``game.step``): a state pytree with leading axis ``[H]``."""
  t = compiled.tree
  H, D = t.num_histories, int(t.max_depth)
  paths = np.full((H, D), -1, np.int32)
  depth = np.asarray(t.depth)
  parent, action = np.asarray(t.parent), np.asarray(t.action)
  h = np.arange(H)
  while True:  # walk every history up at once, writing each action at its depth
    live = h > 0
    if not live.any():
      break
    paths[live, depth[h[live]] - 1] = action[h[live]]
    h = np.where(live, parent[np.maximum(h, 0)], h)

  def one(path):
    def body(s, a):
      nxt = game.step(s, jnp.maximum(a, 0))
      return jax.tree_util.tree_map(lambda x, y: jnp.where(a >= 0, y, x), s, nxt), None
    return jax.lax.scan(body, game.init(), path)[0]

  with jax.enable_x64(True):
    return jax.device_get(jax.jit(jax.vmap(one))(jnp.asarray(paths)))


def assert_private_chance_is_chance_reach(game, compiled):
  """Where both private states are dealt, ``private_chance`` at a history is the compiled
  chance reach of the histories in its public state grouped by private pair (zero for pairs
  no history there has), normalised over the pairs; ``private_index`` is the outcome of the
  player's deal."""
  t = compiled.tree
  states = replay(game, compiled)
  with jax.enable_x64(True):
    idx = np.asarray(jax.jit(jax.vmap(lambda s: jnp.stack(
        [game.private_index(s, 0), game.private_index(s, 1)])))(states))
    chance = np.asarray(jax.jit(jax.vmap(game.private_chance))(states))
  K0, K1 = game.num_private
  assert chance.shape == (t.num_histories, K0, K1)
  assert np.all((idx[:, 0] >= -1) & (idx[:, 0] < K0) & (idx[:, 1] >= -1) & (idx[:, 1] < K1))
  dealt = np.flatnonzero((idx[:, 0] >= 0) & (idx[:, 1] >= 0))
  assert len(dealt)
  pub = np.asarray(t.history_public)
  want = np.zeros((t.num_public_states, K0, K1))
  seen = np.zeros((t.num_public_states, K0, K1), bool)
  reach = np.asarray(t.chance_reach)
  for h in dealt:
    key = (pub[h], idx[h, 0], idx[h, 1])
    if seen[key]:
      assert want[key] == reach[h], "histories of one public state and pair differ in reach"
    want[key], seen[key] = reach[h], True
  want /= np.maximum(want.sum(axis=(1, 2), keepdims=True), 1e-300)
  np.testing.assert_allclose(chance[dealt], want[pub[dealt]], rtol=1e-12, atol=1e-15)
  # the deals: private_index follows the first chance outcomes on the path
  first = np.flatnonzero(np.asarray(t.depth) == 1)
  np.testing.assert_array_equal(idx[first, 0], np.asarray(t.action)[first])
  assert np.all(idx[first, 1] == -1) and np.all(idx[0] == -1)


def _rows(x):
  x = np.ascontiguousarray(x)
  return x.view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).reshape(-1)


def assert_features_tell_keys_apart(game, compiled):
  """Information-state and public features have their declared sizes, are one-hot floats,
  and are equal exactly when the keys are (over every non-terminal history)."""
  states = replay(game, compiled)
  live = np.flatnonzero(np.asarray(compiled.tree.player) != TERMINAL)
  with jax.enable_x64(True):
    for key_fn, feat_fn, size in [
        (lambda s: game.info_key(s, 0), lambda s: game.info_features(s, 0),
         game.info_feature_size),
        (lambda s: game.info_key(s, 1), lambda s: game.info_features(s, 1),
         game.info_feature_size),
        (game.public_key, game.public_features, game.public_feature_size)]:
      keys = np.asarray(jax.jit(jax.vmap(key_fn))(states))[live]
      feats = np.asarray(jax.jit(jax.vmap(feat_fn))(states))[live]
      assert feats.dtype == np.float32 and feats.shape == (len(live), size)
      assert np.all((feats == 0) | (feats == 1))
      n_keys, n_feats = len(np.unique(_rows(keys))), len(np.unique(_rows(feats)))
      n_pairs = len(np.unique(_rows(np.concatenate([keys.astype(np.float64),
                                                    feats.astype(np.float64)], axis=1))))
      assert n_keys == n_feats == n_pairs
