"""Public tree, ranges and counterfactual values against sequence-form references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import public_tree as ptm
from jaxgt.core import sequence_form as sf

from oracle_games import oracle_of


def _random_policy(tree, seed):
  rng = np.random.default_rng(seed)
  out = []
  for pt in tree.players:
    legal = np.asarray(pt.legal)
    x = rng.random(legal.shape) * legal
    out.append(jnp.asarray(x / x.sum(-1, keepdims=True)))
  return tuple(out)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "rps_plus"])
def test_cfvs_match_sequence_form(name):
  g = jaxgt.load(name)
  tree = g.device_tree("float64")
  pol = _random_policy(tree, 0)
  pt = ptm.build_public_tree(g)
  cfv = ptm.counterfactual_values(pt, pol)
  player = np.asarray(tree.player)
  info = np.asarray(tree.infostate)
  for p in (0, 1):
    q, _ = sf.counterfactual_values(tree, pol, p)
    node = np.asarray(jnp.sum(pol[p] * q, -1))
    # Decision information states are augmented information states with the same key.
    for i, key in enumerate(g.infostate_keys[p]):
      h = np.flatnonzero((player == p) & (info == i))[0]
      assert pt.aug_keys[p][pt.aug[p][h]] == key
      assert float(cfv[p][pt.aug[p][h]]) == pytest.approx(node[i], abs=1e-12)
  # At the root public state, sum_I reach(I) cfv(I) is the game value, for both players.
  reach = ptm.ranges(pt, pol, normalize=False)
  ev = float(sf.expected_value(tree, pol))
  for p, sign in ((0, 1.0), (1, -1.0)):
    root = pt.infostates[p][0]
    assert sign * float(jnp.sum(reach[p][root] * cfv[p][root])) == pytest.approx(ev, abs=1e-12)


def test_public_structure_and_ranges_leduc():
  g = jaxgt.load("leduc_poker")
  pt = ptm.build_public_tree(g)
  assert pt.num_public_states == g.tree.num_public_states
  for ps in range(pt.num_public_states):
    for c in pt.children[ps]:
      assert pt.parent[c] == ps and pt.depth[c] == pt.depth[ps] + 1
    # Every non-terminal history of a public state has an augmented infostate of that state.
    hs = pt.histories[ps]
    hs = hs[np.asarray(g.tree.player)[hs] != -4]
    for p in (0, 1):
      assert set(pt.aug[p][hs].tolist()) == set(pt.infostates[p][ps].tolist())
  # After both private deals (depth 2) each player has 6 card information states.
  ps2 = pt.at_depth(2)
  assert len(ps2) == 1 and len(pt.infostates[0][ps2[0]]) == 6
  pol = _random_policy(g.device_tree("float64"), 1)
  r = ptm.ranges(pt, pol)
  for p in (0, 1):
    tot = jax.ops.segment_sum(r[p], jnp.asarray(pt.aug_public[p]), pt.num_public_states)
    has = np.asarray([len(pt.infostates[p][s]) > 0 for s in range(pt.num_public_states)])
    np.testing.assert_allclose(np.asarray(tot)[has], 1.0, atol=1e-12)
  b0, b1 = ptm.public_belief_state(pt, int(ps2[0]), pol)
  np.testing.assert_allclose(b0, [1 / 6] * 6, atol=1e-12)


def test_bad_public_state_and_range():
  leduc = ptm.build_public_tree(jaxgt.load("leduc_poker"))
  kuhn = jaxgt.load("kuhn_poker")
  with pytest.raises(ValueError, match="another game"):
    leduc.public_id(kuhn.public_keys[3])
  with pytest.raises(ValueError, match="out of range"):
    leduc.public_id(10**6)
  ps = int(leduc.at_depth(2)[0])
  with pytest.raises(ValueError, match="shape"):
    leduc.check_range(ps, 0, [0.5, 0.5])
  with pytest.raises(ValueError, match="negative"):
    leduc.check_range(ps, 0, [1.5, -0.5, 0.0, 0.0, 0.0, 0.0])
  with pytest.raises(ValueError, match="sums to"):
    leduc.check_range(ps, 0, [0.5, 0.2, 0.2, 0.0, 0.0, 0.0])


def _replayed_augmented_states(compiled):
  """Reference: replay every compiled history through the game and number
  ``(public state, information_state(s, p))`` by first appearance (how the
  public tree was built before the compiler recorded them; a device game replays its Python
  oracle)."""
  game, t = oracle_of(compiled.game), compiled.tree
  states = [game.initial_state()]
  aug = np.full((2, t.num_histories), -1, np.int64)
  ids = [{}, {}]
  for h in range(t.num_histories):
    if h:
      states.append(game.next_state(states[int(t.parent[h])], int(t.action[h])))
    if t.player[h] == -4:
      continue
    for p in (0, 1):
      key = (int(t.history_public[h]), game.information_state(states[h], p))
      aug[p, h] = ids[p].setdefault(key, len(ids[p]))
  keys = tuple(tuple(k for _, k in d) for d in ids)
  return aug, keys


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "goofspiel(num_cards=3)",
                                  "liars_dice(dice_sides=3)", "rps_plus"])
def test_compiler_records_augmented_states_of_a_replay(name):
  """The compiler's augmented information states (both players, every non-terminal
  history) equal a replay of the game; the public tree built from them needs no replay."""
  g = jaxgt.load(name)
  aug, keys = _replayed_augmented_states(g)
  np.testing.assert_array_equal(g.aug, aug)
  assert g.aug_keys == keys
  pt = ptm.build_public_tree(g)
  assert pt is ptm.build_public_tree(g)  # built once, through CompiledGame.cached
  for p in (0, 1):
    m = aug[p] >= 0
    np.testing.assert_array_equal(pt.aug_public[p][aug[p][m]], g.tree.history_public[m])
    np.testing.assert_array_equal(pt.aug_seq[p][aug[p][m]], g.tree.last_seq[p][m])
