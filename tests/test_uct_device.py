"""UCT / Smooth UCT on device games (information-state tables), against the compiled tree."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import info_table, rng
from jaxgt.games import CHANCE, make
from jaxgt.solvers import base
from jaxgt.solvers import uct as uct_lib
from jaxgt.solvers.sources import Rules, table_stats, tree_rows

PAPER = {"kuhn_poker": 300, "leduc_poker": 150}  # steps of each comparison run


def _solver(name, batch, **kw):
  if name == "uct":
    return uct_lib.uct(batch=batch, **kw)
  return uct_lib.smooth_uct(d=0.5, batch=batch, **kw)  # d large: the average strategy mixes in


def _assert_rows_equal(compiled, rules, tree_state, rules_state):
  """Visits and values of every table row equal the tree's at that information state, and the
  tables hold exactly the tree's visited information states."""
  rows = tree_rows(compiled, rules, rules_state.tables)
  for p in (0, 1):
    n = int(rules_state.tables[p].size)
    visited = np.flatnonzero(np.asarray(tree_state.visits[p]).sum(-1) > 0)
    np.testing.assert_array_equal(np.sort(rows[p]), visited)
    np.testing.assert_array_equal(np.asarray(rules_state.visits[p])[:n],
                                  np.asarray(tree_state.visits[p])[rows[p]])
    np.testing.assert_allclose(np.asarray(rules_state.values[p])[:n],
                               np.asarray(tree_state.values[p])[rows[p]], rtol=1e-6, atol=1e-6)
    assert not np.any(np.asarray(rules_state.visits[p])[n:])


_SLOW = pytest.mark.slow
_CASES = [("kuhn_poker", "uct", 1), ("kuhn_poker", "smooth-uct", 16),
          ("leduc_poker", "smooth-uct", 1), pytest.param("leduc_poker", "uct", 16, marks=_SLOW),
          pytest.param("kuhn_poker", "uct", 16, marks=_SLOW),
          pytest.param("kuhn_poker", "smooth-uct", 1, marks=_SLOW),
          pytest.param("leduc_poker", "uct", 1, marks=_SLOW),
          pytest.param("leduc_poker", "smooth-uct", 16, marks=_SLOW)]


@pytest.mark.parametrize("game_name,name,batch", _CASES)
def test_rules_run_equals_tree_run_row_by_row(game_name, name, batch):
  game = make(game_name)
  compiled = jaxgt.compile_game(game)
  tree, rules = compiled.device_tree("float32"), Rules(game)
  solver = _solver(name, batch)
  key = jax.random.key(11)
  a = solver.run(tree, solver.init(tree), PAPER[game_name], key)
  b = solver.run(rules, solver.init(rules, capacity=600), PAPER[game_name], key)
  _assert_rows_equal(compiled, rules, a, b)
  assert table_stats(b.tables)["refused"] == [0, 0]
  # The exports: the same average and greedy strategies as the tree's, at the same states.
  for which, tree_pol in (("average", solver.average_policy(tree, a)),
                          ("greedy", solver.greedy_policy(tree, a))):
    exported = uct_lib.table_policy(rules, b, which)
    assert len(exported) == sum(int(t.size) for t in b.tables)
    for p in (0, 1):
      for i in np.flatnonzero(np.asarray(a.visits[p]).sum(-1) > 0):
        np.testing.assert_allclose(exported[compiled.infostate_keys[p][i]],
                                   np.asarray(tree_pol[p])[i], atol=1e-6)
  # The device policy at player 0's first decisions (every deal): the tree's average strategy
  # where visited, else uniform over the legal actions.
  deals = [(x, y) for x in range(game.num_outcomes) for y in range(game.num_outcomes)
           if game.chance_probs(game.step(game.init(), x))[y] > 0]
  states = jax.vmap(lambda x, y: game.step(game.step(game.init(), x), y))(
      *jnp.array(deals).T)
  got = np.asarray(jax.jit(lambda s: uct_lib.device_policy(rules, b)(s, 0))(states))
  avg = np.asarray(solver.average_policy(tree, a)[0])
  index = {k: i for i, k in enumerate(compiled.infostate_keys[0])}
  for s_key, row in zip(np.asarray(jax.vmap(lambda s: game.info_key(s, 0))(states)), got):
    np.testing.assert_allclose(row, avg[index[game.info_string(s_key, 0)]], atol=1e-6)


def _reference_with_capacity(solver, tree, key, episodes, capacity):
  """Algorithm 1 one episode at a time in NumPy with at most ``capacity`` information states
  per player: an unvisited state is added while there is room; otherwise (refused) the player
  leaves the tree there without recording it. Returns ``(N, admitted order, refusals)``."""
  A = tree.num_actions
  pl, ch, chp = (np.asarray(x) for x in (tree.player, tree.children, tree.chance_probs))
  info, term, pay = (np.asarray(x) for x in (tree.infostate, tree.history_terminal,
                                             tree.terminal_payoff))
  legal = [np.asarray(tree.players[p].legal) for p in (0, 1)]
  N = [np.zeros((n, A), np.int64) for n in tree.num_infostates]
  Q = [np.zeros((n, A)) for n in tree.num_infostates]
  admitted, refused = ([], []), [0, 0]
  D = tree.max_depth

  def pick(w, u):
    c = np.cumsum(w)
    return min(int(np.sum(c <= u * c[-1])), len(w) - 1)

  for e in range(episodes):
    uni = np.asarray(rng.uniform(base.step_key(key, e), (D, 1), jnp.float64))[:, 0]
    h, out, path = 0, [False, False], []
    for t in range(D):
      p = pl[h]
      if p == CHANCE:
        h = ch[h, pick(chp[h], uni[t])]
        continue
      if p < 0:
        break
      i, lg = info[h], legal[p][info[h]]
      if out[p] or i not in admitted[p]:
        a = pick(lg / lg.sum(), uni[t])
        if not out[p]:
          out[p] = True
          if len(admitted[p]) < capacity:
            admitted[p].append(i)
            path.append((p, i, a))
          else:
            refused[p] += 1
      else:
        n, q = N[p][i], Q[p][i]
        score = np.where(lg, np.where(n > 0, q + solver.c * np.sqrt(np.log(n.sum()) /
                                                                   np.maximum(n, 1)), np.inf),
                         -np.inf)
        top = score.max()
        assert np.isinf(top) or not np.any(lg & (score < top) & (score > top - 1e-9 * abs(top)))
        best = lg & (score == top)
        a = pick(best / best.sum(), uni[t])
        path.append((p, i, a))
      h = ch[h, a]
    r = pay[term[h]]
    for p, i, a in path:
      N[p][i, a] += 1
      Q[p][i, a] += ((r if p == 0 else -r) - Q[p][i, a]) / N[p][i, a]
  return N, admitted, refused


def test_full_table_is_reported_and_refused_states_stay_on_the_rollout_policy():
  """Kuhn with 3 rows per player (of 6): the first 3 states each player adds get the rows in
  order, later ones are refused (counted) and never updated, exactly as a sequential
  reference with the same rule."""
  game = make("kuhn_poker")
  compiled = jaxgt.compile_game(game)
  tree, rules = compiled.device_tree("float64"), Rules(game)
  solver = uct_lib.uct(dtype="float64")
  key = jax.random.key(4)
  state = solver.run(rules, solver.init(rules, capacity=3), 120, key)
  N, admitted, refused = _reference_with_capacity(solver, tree, key, 120, 3)
  stats = table_stats(state.tables)
  assert stats["rows"] == [3, 3] and stats["refused"] == refused and min(refused) > 0
  rows = tree_rows(compiled, rules, state.tables)
  for p in (0, 1):
    assert list(rows[p]) == admitted[p]
    np.testing.assert_array_equal(np.asarray(state.visits[p]), N[p][rows[p]])
  assert int(state.iteration) == 120


class LeducRanks:
  """A test abstraction of Leduc hold'em: the information-state key with each card's suit
  dropped (its rank), i.e. the key of ``leduc_poker(suit_isomorphism=True)``."""

  name = "leduc ranks"
  key_width = make("leduc_poker").info_key_width

  def check_game(self, game):
    if game.game_string() != make("leduc_poker").game_string():
      raise ValueError(f"LeducRanks is for leduc_poker, not {game.game_string()}")

  def key(self, game, state, player):
    k = jnp.asarray(game.info_key(state, player), jnp.int32)
    return k.at[:2].set(jnp.where(k[:2] >= 0, k[:2] // game.suits, -1))


def test_abstraction_shares_rows_and_equals_the_run_on_the_abstract_game():
  """Leduc keyed by card ranks: states whose cards differ only by suit share one row, and the
  run equals UCT on the compiled suit-isomorphic Leduc row by row (chance deals a rank with the
  same probabilities, from the same uniforms)."""
  game, iso = make("leduc_poker"), make("leduc_poker", suit_isomorphism=True)
  rules = Rules(game, LeducRanks())
  solver = uct_lib.smooth_uct(c=18.0, d=0.002, batch=8)
  key = jax.random.key(3)
  state = solver.run(rules, solver.init(rules, capacity=500), 100, key)
  compiled = jaxgt.compile_game(iso)
  tree = compiled.device_tree("float32")
  _assert_rows_equal(compiled, Rules(iso), solver.run(tree, solver.init(tree), 100, key), state)
  # Player 0 holding card 0 or card 1 (both rank 0; player 1 holds card 4): one row.
  deal = lambda mine: game.step(game.step(game.init(), mine), 4)
  keys = jnp.stack([rules.info_key(deal(c), 0) for c in (0, 1, 2)])
  np.testing.assert_array_equal(keys[0], keys[1])
  row = np.asarray(info_table.lookup(state.tables[0], keys))
  assert row[0] == row[1] >= 0 and row[2] >= 0 and row[2] != row[0]
  name = uct_lib.key_name(rules, np.asarray(keys[0]), 0)
  assert name.startswith("player 0: 0 -1 0 ") and name in uct_lib.table_policy(rules, state)
  with pytest.raises(ValueError, match="leduc_poker"):
    Rules(make("kuhn_poker"), LeducRanks())


def test_exploration_schedule_sets_c_per_state():
  """UCB1 at player 0's first decision of Leduc, every deal's row at N = (0, 9, 1) and Q =
  (0, 1, 0): call (1) scores 1 + c sqrt(ln 10 / 9), raise (2) scores c sqrt(ln 10), so raise
  is chosen iff c > 1 / (sqrt(ln 10) - sqrt(ln 10 / 9)) = 0.9885. With c(state) = 0.5, 3.0,
  0.2 for player 0's card of rank 0, 1, 2, a step's episodes call, raise, call (with the
  constant c = 2 they would all raise)."""
  game = make("leduc_poker")
  rules = Rules(game)
  c_of_rank = jnp.array([0.5, 3.0, 0.2])
  threshold = 1 / (np.sqrt(np.log(10)) - np.sqrt(np.log(10) / 9))
  expected = np.where(np.array([0.5, 3.0, 0.2]) > threshold, 2, 1)
  assert list(expected) == [1, 2, 1] and 2.0 > threshold
  deal = lambda mine, theirs: game.step(game.step(game.init(), mine), theirs)
  keys = jnp.stack([rules.info_key(deal(c, (c + 2) % 6), 0) for c in range(6)])

  def counts(exploration):
    solver = uct_lib.uct(c=2.0, batch=64, exploration=exploration)
    state = solver.init(rules, capacity=16)
    t0, rows = info_table.insert(state.tables[0], keys)
    assert sorted(np.asarray(rows)) == list(range(6))
    visits = state.visits[0].at[rows].set(jnp.array([0, 9, 1], jnp.int32))
    values = state.values[0].at[rows].set(jnp.array([0.0, 1.0, 0.0], jnp.float32))
    state = state.replace(tables=(t0, state.tables[1]), visits=(visits, state.visits[1]),
                          values=(values, state.values[1]))
    after = solver.run(rules, state, 1, jax.random.key(0))
    return np.asarray(after.visits[0])[np.asarray(rows)] - np.array([0, 9, 1])  # each deal's

  got = counts(lambda s: c_of_rank[s.cards[0] // game.suits])
  assert got.sum() == 64  # every episode selected at its deal's row
  for card in range(6):
    chosen = np.flatnonzero(got[card])
    assert set(chosen) <= {expected[card // 2]}, (card, got[card])
  assert got[:, 1].sum() > 0 and got[:, 2].sum() > 0


def test_bad_input_is_refused_before_compiling():
  game = make("leduc_poker")
  rules = Rules(game)
  solver = uct_lib.smooth_uct(batch=4)
  before = base.compilations(solver)
  for capacity in (None, 0, -3, True, 2.5):
    with pytest.raises(ValueError, match="capacity"):
      solver.init(rules, capacity=capacity)
  tree = jaxgt.load("kuhn_poker").device_tree("float32")
  with pytest.raises(ValueError, match="capacity"):
    solver.init(tree, capacity=10)
  with pytest.raises(ValueError, match="weights"):
    solver.init(rules, capacity=10, weights=jnp.ones(3))
  state = solver.init(rules, capacity=10)
  with pytest.raises(ValueError, match="does not fit"):
    solver.run(tree, state, 1, jax.random.key(0))  # device-game state, compiled tree
  with pytest.raises(ValueError, match="does not fit"):
    solver.run(rules, solver.init(tree), 1, jax.random.key(0))
  with pytest.raises(ValueError, match="words"):
    solver.run(Rules(make("kuhn_poker")), state, 1, jax.random.key(0))
  with pytest.raises(ValueError, match="num_steps"):
    solver.run(rules, state, -1, jax.random.key(0))
  with pytest.raises(ValueError, match="key"):
    solver.run(rules, state, 1, None)
  with pytest.raises(TypeError, match="exploration"):
    uct_lib.uct(exploration=3.0)
  with pytest.raises(ValueError, match="device game"):
    uct_lib.uct(exploration=lambda s: 1.0).init(tree)
  with pytest.raises(TypeError, match="scalar"):
    uct_lib.uct(exploration=lambda s: jnp.ones(2)).init(rules, capacity=10)
  with pytest.raises(TypeError, match="failed"):
    uct_lib.uct(exploration=lambda s: s.no_such_field).init(rules, capacity=10)
  with pytest.raises(ValueError, match="which"):
    uct_lib.table_policy(rules, state, "best")
  with pytest.raises(ValueError, match="tables"):
    uct_lib.table_policy(rules, solver.init(tree))
  assert base.compilations(solver) == before


def test_holdem_smooth_uct_smoke():
  """Limit hold'em, batch 64, 100k rows per player: 5 steps (320 episodes) fill rows, no
  refusals, finite statistics, policies over the legal actions where played; a run in two
  chunks is the same run."""
  game = make("limit_holdem")
  rules = Rules(game)
  solver = uct_lib.smooth_uct(c=17.0, d=1 / 20000, batch=64)
  assert solver.memory_bytes(rules, 100_000) < 2 ** 24
  state = solver.run(rules, solver.init(rules, capacity=100_000), 5, jax.random.key(0))
  chunked = solver.run(rules, solver.run(rules, solver.init(rules, capacity=100_000), 3,
                                         jax.random.key(0)), 2, jax.random.key(0))
  for x, y in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(chunked)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))  # run(3) + run(2) == run(5)
  stats = table_stats(state.tables)
  assert stats["refused"] == [0, 0] and all(64 <= n <= 320 for n in stats["rows"]), stats
  for p in (0, 1):
    n = stats["rows"][p]
    v, q = np.asarray(state.visits[p]), np.asarray(state.values[p])
    assert np.all(np.isfinite(q)) and np.all(v[:n].sum(-1) > 0) and not np.any(v[n:])
    assert np.all(np.abs(q) <= 240)  # at most 24 big blinds of 10 chips change hands
  avg = solver.average_policy(rules, state)
  np.testing.assert_allclose(np.asarray(avg[0])[:stats["rows"][0]].sum(-1), 1.0, rtol=1e-6)
  exported = uct_lib.table_policy(rules, state, "greedy")
  assert len(exported) == sum(stats["rows"])
  assert all(np.isclose(v.sum(), 1.0) for v in exported.values())
  # The device policy at the first decisions (player 1, the small blind, acts first):
  # distributions over the legal actions.
  def first_decision(cards):
    s = game.init()
    for c in cards:
      if int(game.current_player(s)) != CHANCE:
        break
      s = game.step(s, c)
    assert int(game.current_player(s)) == 1
    return s

  states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[
      first_decision(range(k, 52, 3)) for k in range(8)])
  pol = np.asarray(jax.jit(lambda s: uct_lib.device_policy(rules, state)(s, 1))(states))
  legal = np.asarray(jax.vmap(game.legal_mask)(states))
  np.testing.assert_allclose(pol.sum(-1), 1.0, rtol=1e-6)
  assert not np.any(pol[~legal])
