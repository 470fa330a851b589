"""ISMCTS on device games (Rules): the same run as on the compiled tree, determinization by
chance reach, full tables reported, bad input refused before compiling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.core.targets import ancestor_chains, chain_reach, member_row, target_members
from jaxgt.games.base import CHANCE
from jaxgt.solvers import consistent
from jaxgt.solvers.base import compilations
from jaxgt.solvers.ismcts import ISMCTS
from jaxgt.solvers.sources import Rules, tree_rows


def _path(game, actions):
  arr = np.full(game.max_length, -1, np.int32)
  arr[:len(actions)] = actions
  return consistent.search_path(game, jnp.asarray(arr), len(actions))


def _state(game, actions):
  s = game.init()
  for a in actions:
    s = game.step(s, a)
  return s


def _assert_same_rows(compiled, rules, cfg, a, b):
  """The tree run ``a`` and the device run ``b`` keep the same statistics, row for row."""
  rows = tree_rows(compiled, rules, b.tables)
  for p in (0, 1):
    assert len(rows[p]) == int(np.asarray(a.in_tree[p]).sum()) > 0
    np.testing.assert_array_equal(np.flatnonzero(np.asarray(a.in_tree[p])), np.sort(rows[p]))
    for name in cfg._statistics:
      x, y = np.asarray(getattr(a, name)[p]), np.asarray(getattr(b, name)[p])
      np.testing.assert_allclose(y[:len(rows[p])], x[rows[p]], rtol=1e-6, atol=1e-6)
      assert not y[len(rows[p]):].any()
  assert int(b.size) == int(a.size) and int(b.skipped) == 0


@pytest.mark.parametrize("name", ["kuhn_poker", pytest.param("leduc_poker",
                                                             marks=pytest.mark.slow)])
def test_rules_run_equals_tree_run_from_the_root(name):
  """Same key, same simulations: UCT and RM statistics equal row by row (tree_rows)."""
  game = jaxgt.games.make(name)
  compiled = compile_game(game)
  tree, rules = compiled.device_tree("float32"), Rules(game)
  for selection in ("uct", "rm"):
    cfg = ISMCTS(selection=selection, batch=8)
    a = cfg.run(tree, cfg.init(tree), 30, jax.random.key(3))
    b = cfg.run(rules, cfg.init(rules, capacity=500), 30, jax.random.key(3))
    _assert_same_rows(compiled, rules, cfg, a, b)


def _member_weights(compiled, actions):
  """The compiled tree's determinization at the position ``actions``: ``{chance outcomes along
  the history: chance reach}`` over the histories of the searcher's information state."""
  tree = compiled.device_tree("float64")
  children, parent = np.asarray(tree.children), np.asarray(tree.parent)
  action, player = np.asarray(tree.action), np.asarray(tree.player)
  h = 0
  for a in actions:
    h = int(children[h, a])
  row = member_row(tree, "ist", jnp.asarray(target_members(tree, "ist")), jnp.int32(h))
  reach = np.asarray(chain_reach(tree, ancestor_chains(tree, tree.max_depth, row)))
  out = {}
  for m, w in zip(np.asarray(row), reach):
    if m < 0:
      continue
    outcomes = []
    while m > 0:
      if player[parent[m]] == CHANCE:
        outcomes.append(int(action[m]))
      m = parent[m]
    out[tuple(reversed(outcomes))] = out.get(tuple(reversed(outcomes)), 0.0) + float(w)
  total = sum(out.values())
  return {k: v / total for k, v in out.items()}


@pytest.mark.parametrize("name,params,actions", [
    # Leduc with suit isomorphism: chance deals ranks in copies, so how many copies of the
    # board's rank are left depends on the opponent's card (posterior 1/4, 1/4, 1/2; walking
    # through consistent chance outcomes alone would give 1/5, 2/5, 2/5).
    ("leduc_poker", {"suit_isomorphism": True}, [0, 1, 1, 1, 1]),
    ("leduc_poker", {"suit_isomorphism": True}, [2, 2, 1, 1, 0, 2]),  # player 1 searches
    ("leduc_poker", {}, [0, 2, 2]),  # exact cards: the opponent's card is uniform
])
def test_determinization_draws_the_trees_member_weights(name, params, actions):
  """States of I(m) drawn on the device game are distributed as the compiled tree's
  determinization (its members' chance reach)."""
  game = jaxgt.games.make(name, **params)
  expected = _member_weights(compile_game(game), actions)
  n = 20000
  path = _path(game, actions)
  states, ok = jax.jit(lambda p, k: consistent.sample_information_state(
      game, p, k, n, consistent.information_state_bound(game, p)))(path, jax.random.key(5))
  assert np.asarray(ok).all()
  cards = np.asarray(states.cards)
  got = {}
  for c in map(tuple, cards):
    key = tuple(int(x) for x in c if x >= 0)
    got[key] = got.get(key, 0) + 1
  assert set(got) <= set(expected), set(got) - set(expected)
  for k, p in expected.items():
    freq = got.get(k, 0) / n
    assert abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12, (k, freq, p)


@pytest.mark.slow
def test_search_from_a_match_position():
  """Kuhn, player 1 holding the king facing a bet: every simulation starts in I(m) (its row
  gets them all) and both selection rules call."""
  game = jaxgt.games.make("kuhn_poker")
  rules, actions = Rules(game), [0, 2, 1]
  path, here = _path(game, actions), jax.tree_util.tree_map(lambda x: x[None],
                                                            _state(game, actions))
  for selection in ("uct", "rm"):
    cfg = ISMCTS(selection=selection, batch=4)
    s = cfg.run(rules, cfg.init(rules, capacity=16), 100, jax.random.key(0), path=path)
    assert int(s.skipped) == 0
    probs = np.asarray(cfg.state_policy(rules, s, here))[0]
    assert probs[1] > 0.8, (selection, probs)  # call
    # I(m) is player 1's first row (every simulation of the first step inserts it)
    assert np.asarray(s.visits[1])[0].sum() == 400
    # Observations no state shows (player 1 holding a card 7): no determinization, nothing
    # updated.
    bogus = path.replace(keys=path.keys.at[2:, 0].set(7))
    s = cfg.run(rules, cfg.init(rules, capacity=16), 5, jax.random.key(0), path=bogus)
    assert int(s.skipped) == 20 and int(s.size) == 0 and not np.asarray(s.visits[1]).any()


def test_full_table_is_reported_and_the_run_completes():
  """Capacity 3 on Leduc: refused inserts are counted, those states stay playout-only."""
  game = jaxgt.games.make("leduc_poker")
  rules = Rules(game)
  for selection in ("uct", "rm"):
    cfg = ISMCTS(selection=selection, batch=16)
    s = cfg.run(rules, cfg.init(rules, capacity=3), 20, jax.random.key(1))
    assert [int(t.size) for t in s.tables] == [3, 3] and int(s.size) == 6
    assert sum(int(t.refused) for t in s.tables) > 0
    for name in cfg._statistics:
      for p in (0, 1):
        x = np.asarray(getattr(s, name)[p])
        assert x.shape == (3, 3) and np.isfinite(x).all()
    assert np.asarray(s.visits[0]).sum() > 0 and np.asarray(s.visits[1]).sum() > 0
    arrays = jax.tree_util.tree_leaves((s.tables, [getattr(s, n) for n in cfg._statistics]))
    assert cfg.memory_bytes(rules, 3) == sum(x.nbytes for x in arrays if x.ndim)


def test_bad_input_is_refused_before_compiling():
  kuhn, leduc = jaxgt.games.make("kuhn_poker"), jaxgt.games.make("leduc_poker")
  rules, tree = Rules(kuhn), compile_game(kuhn).device_tree("float32")
  cfg = ISMCTS()
  before = compilations(cfg)
  with pytest.raises(ValueError, match="capacity"):
    cfg.init(rules)
  with pytest.raises(ValueError, match="capacity"):
    cfg.init(rules, capacity=0)
  with pytest.raises(ValueError, match="capacity"):
    ISMCTS(capacity=4).init(rules, capacity=4)
  with pytest.raises(ValueError, match="capacity"):
    cfg.init(tree, capacity=4)
  with pytest.raises(ValueError, match="max_utility"):
    cfg.init(Rules(jaxgt.games.make("nonlocality")), capacity=4)
  ISMCTS(c=1.0).init(Rules(jaxgt.games.make("nonlocality")), capacity=4)  # an explicit c
  state, tree_state = cfg.init(rules, capacity=8), cfg.init(tree)
  key = jax.random.key(0)
  with pytest.raises(ValueError, match="does not fit"):
    cfg.run(rules, tree_state, 1, key)
  with pytest.raises(ValueError, match="does not fit"):
    cfg.run(tree, state, 1, key)
  with pytest.raises(ValueError, match="words"):
    cfg.run(Rules(leduc), state, 1, key)
  with pytest.raises(ValueError, match="path"):
    cfg.run(rules, state, 1, key, history=3)
  with pytest.raises(ValueError, match="history"):
    cfg.run(tree, tree_state, 1, key, path=_path(kuhn, [0, 1]))
  with pytest.raises(ValueError, match="another game"):
    cfg.run(rules, state, 1, key, path=_path(leduc, [0, 1]))
  with pytest.raises(ValueError, match="not a decision"):
    cfg.run(rules, state, 1, key, path=_path(kuhn, [0]))
  with pytest.raises(TypeError, match="SearchPath"):
    cfg.run(rules, state, 1, key, path=[0, 1])
  with pytest.raises(ValueError, match="batch"):
    ISMCTS(batch=0)
  assert compilations(cfg) == before


@pytest.mark.slow
@pytest.mark.parametrize("name,params,actions", [
    ("liars_dice", {"numdice": 2}, [0, 3, 1, 5, 0, 2]),  # dice, a bid each
    ("ii_goofspiel", {"num_cards": 13}, [6, 3, 12, 0]),  # two rounds of bids
])
def test_smoke_from_a_match_position(name, params, actions):
  game = jaxgt.games.make(name, **params)
  rules, path = Rules(game), _path(game, actions)
  assert int(path.player) in (0, 1)
  for selection in ("uct", "rm"):
    cfg = ISMCTS(selection=selection, batch=64)
    s = cfg.run(rules, cfg.init(rules, capacity=4096), 4, jax.random.key(2), path=path)
    for leaf in jax.tree_util.tree_leaves(s):
      if jnp.issubdtype(leaf.dtype, jnp.floating):
        assert np.isfinite(np.asarray(leaf)).all()
    assert int(s.skipped) == 0 and int(s.size) > 1
    assert np.asarray(s.visits[int(path.player)])[0].sum() == 4 * 64  # I(m): every simulation
