"""Online Outcome Sampling on device games (Lisy, Lanctot, Bowling 2015, Algorithm 1): memory in
information-state tables, targeting through a SearchPath, w_T from a reach estimate."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import info_table
from jaxgt.core.compiler import compile_game
from jaxgt.games.base import CHANCE
from jaxgt.solvers import oos
from jaxgt.solvers import oos_targeting
from jaxgt.solvers.base import compilations
from jaxgt.solvers.consistent import consistent_children, search_path
from jaxgt.solvers.oos import OOS
from jaxgt.solvers.sources import Rules, source_of, table_stats, tree_rows
from jaxgt.solvers.walk import walk

# Leduc, player 1 holding card 4 in round 2 (public card 3) facing a raise.
LEDUC_I = ("[Observer: 1][Private: 4][Round 2][Player: 1][Pot: 22][Money: 87 91][Public: 3]"
           "[Round1: 1 2 2 1][Round2: 1 2 2]")
SOLVER = OOS(batch=4, dtype="float64")  # one configuration, compiled once per game
CAPACITY = 600  # rows per player: Leduc has 468 information states per player


def _actions(tree, h):
  """The actions (chance outcomes included) from the root to history ``h``."""
  out = []
  while int(tree.parent[h]) >= 0:
    out.append(int(tree.action[h]))
    h = int(tree.parent[h])
  return out[::-1]


def _path(game, actions):
  L = game.max_length
  return search_path(game, jnp.asarray(list(actions) + [-1] * (L - len(actions)), jnp.int32),
                     len(actions))


@pytest.fixture(scope="module")
def leduc():
  """Leduc compiled, its Rules, the match position at LEDUC_I (tree history, SearchPath) and a
  device state after an untargeted run (non-uniform sums, part of the game in memory)."""
  g = jaxgt.games.make("leduc_poker")
  c = compile_game(g)
  tree = c.device_tree("float64")
  i = c.infostate_keys[1].index(LEDUC_I)
  h = int(np.flatnonzero((np.asarray(tree.player) == 1) & (np.asarray(tree.infostate) == i))[0])
  rules = Rules(g)
  path = _path(g, _actions(c.tree, h))
  state = SOLVER.run(rules, SOLVER.init(rules, capacity=CAPACITY), 100, jax.random.key(3))
  return dict(game=g, compiled=c, tree=tree, info=i, history=h, rules=rules, path=path,
              state=state)


def _tree_state(solver, compiled, tree, rules, state):
  """The compiled tree's OOS state holding a device state's rows (for runs from the same start)."""
  rows = tree_rows(compiled, rules, state.tables)
  regrets, cum, in_tree = [], [], []
  for p in (0, 1):
    n, r = len(rows[p]), rows[p]
    shape = (tree.num_infostates[p], tree.num_actions)
    regrets.append(jnp.zeros(shape, jnp.float64).at[r].set(state.regrets[p][:n]))
    cum.append(jnp.zeros(shape, jnp.float64).at[r].set(state.cum_policy[p][:n]))
    in_tree.append(jnp.zeros(shape[0], bool).at[r].set(True))
  base = solver.init(tree)
  return base.replace(regrets=tuple(regrets), cum_policy=tuple(cum), in_tree=tuple(in_tree),
                      size=jnp.asarray(sum(len(r) for r in rows), jnp.int32))


def _row(state, player, key):
  return int(info_table.lookup(state.tables[player], jnp.asarray(key)[None])[0])


def _check_same_run(compiled, tree_state, rules, state, rtol=1e-12):
  rows = tree_rows(compiled, rules, state.tables)
  for p in (0, 1):
    r, n = rows[p], len(rows[p])
    # The same information states entered memory, and each row holds the tree's numbers.
    assert int(np.asarray(tree_state.in_tree[p]).sum()) == n
    assert np.asarray(tree_state.in_tree[p])[r].all()
    for a, b in ((state.regrets, tree_state.regrets), (state.cum_policy, tree_state.cum_policy)):
      np.testing.assert_allclose(np.asarray(a[p])[:n], np.asarray(b[p])[r], rtol=rtol,
                                 atol=1e-12)
      assert not np.asarray(a[p])[n:].any()
  assert int(state.size) == int(tree_state.size)


@pytest.mark.parametrize("batch", [4, pytest.param(16, marks=pytest.mark.slow)])
def test_rules_run_equals_tree_run_on_kuhn(batch):
  """No position: the Rules-backed run draws the tree-backed run's samples from the same key and
  keeps the same regrets and sums, row by row (delta plays no part without a target). Batch 16
  replays the walk on all rows at once, batch 4 in a loop."""
  g = jaxgt.games.make("kuhn_poker")
  c = compile_game(g)
  tree = c.device_tree("float64")
  rules = Rules(g)
  solver = OOS(batch=batch, dtype="float64")
  a = solver.run(tree, solver.init(tree), 60, jax.random.key(1), history=None)
  b = solver.run(rules, solver.init(rules, capacity=8), 60, jax.random.key(1), path=None)
  assert table_stats(b.tables)["rows"] == [6, 6]
  _check_same_run(c, a, rules, b)


@pytest.mark.slow  # two Leduc compilations
def test_rules_run_equals_tree_run_on_leduc(leduc):
  c, tree, rules = leduc["compiled"], leduc["tree"], leduc["rules"]
  a = SOLVER.run(tree, SOLVER.init(tree), 100, jax.random.key(3), history=None)
  _check_same_run(c, a, rules, leduc["state"])
  assert 0 < int(leduc["state"].size) < 2 * 468  # memory grew, not to the whole game


def test_full_table_is_reported_and_the_run_completes():
  """A table of 2 rows per player: the states that find no row are refused (counted), played by
  the playout and never updated; the run goes on."""
  g = jaxgt.games.make("kuhn_poker")
  rules = Rules(g)
  st = SOLVER.run(rules, SOLVER.init(rules, capacity=2), 30, jax.random.key(0))
  stats = table_stats(st.tables)
  assert stats["rows"] == [2, 2] and min(stats["refused"]) > 0 and int(st.size) == 4
  for p in (0, 1):
    assert np.isfinite(np.asarray(st.regrets[p])).all()
    assert np.asarray(st.cum_policy[p]).any() or np.asarray(st.regrets[p]).any()


@pytest.mark.parametrize("targeting", ["ist", pytest.param("pst", marks=pytest.mark.slow)])
def test_reach_estimate_is_unbiased_for_the_targeted_set(leduc, targeting):
  """The importance weights pi_bar(h) / q(h) of prefixes drawn through consistent children average
  to the exact mean-profile reach of the targeted set (the tree's w_T with delta = 1 is its
  reciprocal), within sampling error."""
  tree, rules, state = leduc["tree"], leduc["rules"], leduc["state"]
  solver = OOS(delta=1.0, targeting=targeting, dtype="float64")
  ts = _tree_state(solver, leduc["compiled"], tree, rules, state)
  _, w = solver.targets(tree, ts, jnp.asarray(leduc["history"]))
  exact = 1.0 / float(w)
  K = 8000
  x = np.asarray(jax.jit(lambda s, k: oos_targeting.target_reach_samples(
      solver, rules, s, leduc["path"], k, K))(state, jax.random.key(7)))
  assert (x == 0).any() and (x > 0).mean() > 0.5  # card removal: some prefixes dead-end
  err = x.std() / np.sqrt(K)
  assert abs(x.mean() - exact) < 4 * err, (x.mean(), exact, err)
  assert err < 0.05 * exact  # a meaningful comparison
  # And w_T as the run estimates it (reach_samples prefixes): a ratio estimate of the exact one.
  wide = OOS(delta=1.0, targeting=targeting, dtype="float64", reach_samples=4096)
  est = float(oos_targeting.estimate_weighting_factor(wide, rules, state, leduc["path"],
                                                      jax.random.key(8)))
  assert est == pytest.approx(float(w), rel=0.1)


def test_targeted_trajectories_follow_the_searcher_keys(leduc):
  """Inside memory a targeted trajectory's first `length` steps agree with the searcher's keys
  (except after a card-removal dead end, where the walk goes on unrestricted); untargeted ones
  mostly do not."""
  g, rules, path = leduc["game"], leduc["rules"], leduc["path"]
  state = SOLVER.run(rules, leduc["state"], 300, jax.random.key(4), path=path)
  length, B = int(path.length), 400
  src = source_of(rules, state.tables, jnp.float64)
  uni = jax.random.uniform(jax.random.key(5), (g.max_length, B), jnp.float64)
  policy = oos.rules_node_policy(SOLVER, rules, state, 0, path)
  agree = {}
  run = jax.jit(lambda u, t: walk(src, policy, u, carry=jnp.ones(B, bool), targeted=t)[0])
  for targeted in (True, False):
    traj = run(uni, jnp.full(B, targeted))
    flat = jax.tree_util.tree_map(lambda x: x[:length + 1].reshape((-1,) + x.shape[2:]),
                                  traj.history)
    keys = jax.vmap(lambda s: g.info_key(s, 1))(flat).reshape(length + 1, B, -1)
    same = np.all(np.asarray(keys) == np.asarray(path.keys[:length + 1])[:, None], axis=(0, 2))
    _, _, _, new_node = traj.record
    inside = ~np.asarray(new_node)[:length].any(axis=0)
    dead = ~np.asarray(consistent_children(g, flat, jnp.repeat(jnp.arange(length + 1), B),
                                           path).any(-1)).reshape(length + 1, B)[:length]
    clean = inside & ~dead.any(axis=0)
    agree[targeted] = same
    if targeted:
      assert clean.mean() > 0.5 and dead.any()
      assert same[clean].all()
  assert agree[True].mean() > 0.5 > 10 * agree[False].mean()


def _increments(solver, tree_or_rules, start, n, key, position, read):
  end = solver.run(tree_or_rules, start, n, key, **position)
  return read(end) - read(start), end


@pytest.mark.parametrize("targeting", ["ist", pytest.param("pst", marks=pytest.mark.slow)])
def test_targeted_run_is_the_tree_run_scaled_by_w_t(targeting):
  """Leduc, round 1, player 0 facing a re-raise (IST) or player 1 facing a raise (PST): no
  consistent child is ever a dead end there, so the targeted walks on the rules and on the tree
  restrict to the same children and draw the same samples from the same key. The runs can
  differ only by w_T (estimated here, exact on the tree; from empty memory the mean profile is
  uniform and every prefix weighs the same, so the estimate is exact up to rounding), which
  scales every update of a search alike: the statistics agree row by row after rescaling."""
  g = jaxgt.games.make("leduc_poker")
  c = compile_game(g)
  tree = c.device_tree("float64")
  rules = Rules(g)
  actions = [0, 3, 2, 2] if targeting == "ist" else [1, 4, 2]  # deals, then raises
  path = _path(g, actions)
  h = 0
  for a in actions:
    h = int(c.tree.children[h, a])
  assert int(path.player) == int(c.tree.player[h]) == (0 if targeting == "ist" else 1)
  solver = OOS(batch=4, targeting=targeting, dtype="float64")
  key = jax.random.key(5)
  dev = solver.run(rules, solver.init(rules, capacity=CAPACITY), 200, key, path=path)
  ref = solver.run(tree, solver.init(tree), 200, key, history=h)
  start = solver.init(rules, capacity=CAPACITY)
  w_dev = float(oos_targeting.estimate_weighting_factor(
      solver, rules, start, path, oos_targeting.reach_key(key, 0)))
  w_tree = float(solver.targets(tree, solver.init(tree), jnp.asarray(h))[1])
  assert w_tree > 1.5 and w_dev == pytest.approx(w_tree, rel=1e-9)
  scaled = jax.tree_util.tree_map(lambda x: x * (w_tree / w_dev), (dev.regrets, dev.cum_policy))
  _check_same_run(c, ref, rules, dev.replace(regrets=scaled[0], cum_policy=scaled[1]),
                  rtol=1e-9)


@pytest.mark.slow  # a targeted tree run and the PST compilation
@pytest.mark.parametrize("targeting", ["ist", "pst"])
def test_targeted_search_concentrates_on_the_searcher(leduc, targeting):
  """Round 2, with card-removal dead ends: from the same start, the targeted search adds far more
  to the searcher's sums at I(m) than an untargeted one; under IST its strategy there approaches
  the tree-backed targeted run's (statistically: w_T is estimated and the walks differ after a
  dead end)."""
  c, tree, rules, path = leduc["compiled"], leduc["tree"], leduc["rules"], leduc["path"]
  solver = OOS(batch=4, targeting=targeting, dtype="float64")
  start = leduc["state"]  # untargeted: the same for either targeting
  key_i = path.keys[int(path.length)]

  def at_i(st):
    r = _row(st, 1, key_i)
    return np.asarray(st.cum_policy[1][r]) if r >= 0 else np.zeros(rules.num_actions)

  n = 3000
  added = {}
  for name, pos in (("targeted", path), ("untargeted", None)):
    added[name], _ = _increments(solver, rules, start, n, jax.random.key(11), {"path": pos}, at_i)
  # IST sends delta of the samples through I(m); PST through its public state, of which I(m)
  # is one of several information states.
  assert added["targeted"].sum() > (100 if targeting == "ist" else 3) * added[
      "untargeted"].sum() > 0
  if targeting == "ist":
    mine = added["targeted"] / added["targeted"].sum()
    ts = _tree_state(solver, c, tree, rules, start)
    i = leduc["info"]
    theirs, _ = _increments(solver, tree, ts, n, jax.random.key(11),
                            {"history": leduc["history"]},
                            lambda st: np.asarray(st.cum_policy[1][i]))
    np.testing.assert_allclose(mine, theirs / theirs.sum(), atol=0.1)


def _match(game, decisions, seed):
  """Actions of a random match (chance by its probabilities) up to the ``decisions``-th decision;
  ``None`` when it ends first."""
  rs = np.random.default_rng(seed)
  s, acts, made = game.init(), [], 0
  while True:
    p = int(game.current_player(s))
    if p == CHANCE:
      pr = np.asarray(game.chance_probs(s), np.float64)
      a = int(rs.choice(len(pr), p=pr / pr.sum()))
    elif p in (0, 1):
      if made == decisions:
        return acts
      made += 1
      a = int(rs.choice(np.flatnonzero(np.asarray(game.legal_mask(s)))))
    else:
      return None
    acts.append(a)
    s = game.step(s, a)


@pytest.mark.slow  # two large games' compilations
@pytest.mark.parametrize("name,params", [("ii_goofspiel", {"num_cards": 13}),
                                         ("liars_dice", {"numdice": 2})])
def test_ist_search_on_large_games(name, params):
  """II-Goofspiel(13) and Liar's Dice (2,2), IST from a match position after a few moves at
  batch 64: finite tables, memory grown, the searcher's information state in memory."""
  g = jaxgt.games.make(name, **params)
  acts = next(a for a in (_match(g, 4, s) for s in range(20)) if a is not None)
  path = _path(g, acts)
  rules = Rules(g)
  solver = OOS(batch=64)
  st = solver.run(rules, solver.init(rules, capacity=50_000), 5, jax.random.key(0), path=path)
  for x in st.regrets + st.cum_policy:
    assert np.isfinite(np.asarray(x)).all()
  assert min(table_stats(st.tables)["rows"]) > 0 and table_stats(st.tables)["refused"] == [0, 0]
  assert _row(st, int(path.player), path.keys[int(path.length)]) >= 0


def test_bad_input_is_refused_before_compiling():
  kuhn = jaxgt.games.make("kuhn_poker")
  rules = Rules(kuhn)
  solver = OOS(batch=3, dtype="float64")
  before = compilations(solver)
  with pytest.raises(ValueError, match="capacity"):
    solver.init(rules)
  with pytest.raises(ValueError, match="capacity"):
    solver.init(rules, capacity=0)
  with pytest.raises(ValueError, match="capacity"):
    OOS(capacity=10).init(rules, capacity=10)
  with pytest.raises(ValueError, match="reach_samples"):
    OOS(reach_samples=0)
  state = solver.init(rules, capacity=8)
  leduc = jaxgt.games.make("leduc_poker")
  with pytest.raises(ValueError, match="another game"):
    solver.run(rules, state, 1, jax.random.key(0), path=_path(leduc, [0, 1]))
  with pytest.raises(ValueError, match="no player acts"):
    solver.run(rules, state, 1, jax.random.key(0), path=_path(kuhn, [0, 1, 0, 0]))
  with pytest.raises(ValueError, match="path"):
    solver.run(rules, state, 1, jax.random.key(0), history=3)
  with pytest.raises(TypeError, match="SearchPath"):
    solver.run(rules, state, 1, jax.random.key(0), path=3)
  with pytest.raises(ValueError, match="num_steps"):
    solver.run(rules, state, -1, jax.random.key(0))
  with pytest.raises(ValueError, match="key"):
    solver.run(rules, state, 1, None)
  tree = compile_game(kuhn).device_tree("float64")
  with pytest.raises(ValueError, match="device game"):
    solver.run(rules, solver.init(tree), 1, jax.random.key(0))
  with pytest.raises(ValueError, match="Rules"):
    solver.run(tree, state, 1, jax.random.key(0))
  with pytest.raises(ValueError, match="keys"):
    solver.run(Rules(leduc), state, 1, jax.random.key(0))
  with pytest.raises(ValueError, match="capacity"):
    solver.init(tree, capacity=8)
  assert compilations(solver) == before
  assert solver.memory_bytes(rules, 8) == 2 * info_table.table_bytes(8, 2, 2 * 2 * 8)


@pytest.mark.slow  # a jitted match's compilation
def test_device_search_agent_plays_oos_matches():
  """The oos spec on a device game plays through DeviceSearchAgent (tables kept for the match,
  a SearchPath per move, traced inside the jitted match)."""
  from jaxgt.agents.specs import make_agent
  from jaxgt.evaluation.match import play
  g = jaxgt.games.make("liars_dice", numdice=1)
  agent = make_agent(g, "oos(iterations=20,batch=4,capacity=5000)")
  assert isinstance(agent.solver, OOS) and agent.keeps_memory
  result = play(g, agent, make_agent(g, "random"), 4, jax.random.key(0))
  assert np.isfinite(result.scores).all()
  memory = result.memory[0]
  assert min(memory["rows"]) > 0 and memory["refused"] == [0, 0]


@pytest.mark.parametrize("name", ["ii_goofspiel", "rps_plus"])
def test_public_subgame_targeting_refused_on_device_games_without_public_actions(name):
  """Every action of II-Goofspiel (the bids) and of RPS+ is private, so these device games
  have no public subgame (Lisy, Lanctot, Bowling 2015, Sec. 4.2): OOS-PST is refused by the
  solver, the device search agent and an agent spec, before any compilation; OOS-IST is not,
  nor is OOS-PST on Kuhn, whose bets are public."""
  from jaxgt.agents.device_search import DeviceSearchAgent
  from jaxgt.agents.specs import make_agent

  game = jaxgt.games.make(name)
  assert not game.public_actions
  rules, pst, ist = Rules(game), OOS(targeting="pst"), OOS(targeting="ist")
  before = compilations(pst)
  with pytest.raises(ValueError, match="no public subgame"):
    pst.init(rules, capacity=8)
  with pytest.raises(ValueError, match="no public subgame"):  # a state made by OOS-IST
    pst.run(rules, ist.init(rules, capacity=8), 1, jax.random.key(0))
  with pytest.raises(ValueError, match="no public subgame"):
    DeviceSearchAgent(game, pst, iterations=1, capacity=8)
  with pytest.raises(ValueError, match="no public subgame"):
    make_agent(game, "oos(iterations=1,targeting=pst,capacity=8)")
  assert compilations(pst) == before
  DeviceSearchAgent(game, ist, iterations=1, capacity=8)
  DeviceSearchAgent(jaxgt.games.make("kuhn_poker"), pst, iterations=1, capacity=8)
