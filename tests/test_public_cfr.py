"""CFR on the factored public tree against the sequence form (history by history) of the same
game, OpenSpiel-sized enumerations and Kuhn's closed-form value."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import sequence_form
from jaxgt.core.factored import build_factored_tree
from jaxgt.games import make_from_string
from jaxgt.solvers import public_cfr


@pytest.fixture(scope="module")
def factored():
  """``name -> (FactoredTree, CompiledGame)``, built once per game."""
  cache = {}

  def get(name):
    if name not in cache:
      cache[name] = (build_factored_tree(make_from_string(name)), jaxgt.load(name))
    return cache[name]

  return get


# (game, solver factory, iterations): rounding differences between the two forms' orders of
# summation grow with the iterations where regret matching+ clips near zero; GP(3,3,2,2)
# agrees to 1e-12 at 20 iterations and drifts past 1e-6 by 50
CASES = [("kuhn_poker", jaxgt.cfr_plus, 100), ("kuhn_poker", jaxgt.discounted_cfr, 100),
         pytest.param("leduc_poker", jaxgt.cfr_plus, 60, marks=pytest.mark.slow),
         pytest.param("leduc_poker", jaxgt.linear_cfr, 60, marks=pytest.mark.slow),
         pytest.param("liars_dice(numdice=1)", jaxgt.cfr_plus, 40, marks=pytest.mark.slow),
         pytest.param("generic_poker(T=3,C=3,R=2,B=2)", jaxgt.cfr_plus, 20,
                      marks=pytest.mark.slow)]


def _close(a, b, rtol=1e-6):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
  assert np.max(np.abs(a - b), initial=0.0) <= rtol * scale


@pytest.mark.parametrize("name,factory,iterations", CASES)
def test_factored_iterates_equal_the_sequence_form(factored, name, factory, iterations):
  ft, comp = factored(name)
  solver = factory(dtype="float64")
  tree = comp.device_tree("float64")
  seq = solver.run(tree, solver.init(tree), iterations)
  pcfr = public_cfr.PublicTreeCFR(solver)
  st = pcfr.run(ft, pcfr.init(ft), iterations)
  for p in (0, 1):
    rows, infos = public_cfr.rows_of(ft, comp, p)
    for field in ("regrets", "cum_policy"):
      _close(np.asarray(getattr(st, field)[p])[rows], np.asarray(getattr(seq, field)[p])[infos])
  policy = pcfr.policy(ft, st)
  expected = solver.policy(tree, seq)
  _close(public_cfr.exploitability(ft, policy), sequence_form.exploitability(tree, expected))
  _close(public_cfr.expected_value(ft, policy), sequence_form.expected_value(tree, expected))
  # the same policy read on the enumerated game
  hist = tuple(jnp.asarray(h) for h in public_cfr.to_policy(ft, comp, policy))
  _close(sequence_form.exploitability(tree, hist), public_cfr.exploitability(ft, policy),
         rtol=1e-9)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", pytest.param(
    "liars_dice(numdice=1)", marks=pytest.mark.slow)])
def test_information_states_are_the_enumerated_games(factored, name):
  ft, comp = factored(name)
  for p in (0, 1):
    keys = [k for k in ft.infostate_strings(p) if k is not None]
    assert len(keys) == len(set(keys)) == comp.tree.num_infostates[p]
    assert set(keys) == set(comp.infostate_keys[p])


def test_kuhn_value_and_exploitability_approach_the_closed_form(factored):
  ft, _ = factored("kuhn_poker")
  pcfr = public_cfr.PublicTreeCFR(jaxgt.cfr_plus(dtype="float64"))
  st = pcfr.run(ft, pcfr.init(ft), 2000)
  policy = pcfr.policy(ft, st)
  assert float(public_cfr.exploitability(ft, policy)) < 1e-3
  assert abs(float(public_cfr.expected_value(ft, policy)) + 1 / 18) < 1e-3
  # and a best response to the uniform policy is exactly what the sequence form says
  uniform = tuple(sequence_form.uniform(np.repeat(ft.legal[p], 3, axis=0)) for p in (0, 1))
  br = public_cfr.best_response_values(ft, uniform)
  comp = jaxgt.load("kuhn_poker")
  tree = comp.device_tree("float64")
  u = sequence_form.uniform_policy(tree, jnp.float64)
  for p in (0, 1):
    _close(br[p], sequence_form.best_response_value(tree, u, p), rtol=1e-12)


def test_root_beliefs_batch_under_vmap(factored):
  ft, _ = factored("kuhn_poker")
  pcfr = public_cfr.PublicTreeCFR(jaxgt.cfr_plus(dtype="float64"))
  beliefs = [(np.ones(3), np.ones(3)), (np.array([1.0, 0.5, 0.0]), np.array([0.2, 1.0, 1.0]))]
  states = [pcfr.init(ft, root_reach=b) for b in beliefs]
  batch = jax.tree.map(lambda *x: jnp.stack(x), *states)
  out = jax.jit(jax.vmap(lambda s: pcfr.loop(ft, s, 30)))(batch)
  for i, s in enumerate(states):
    one = pcfr.run(ft, s, 30)
    _close(out.regrets[0][i], one.regrets[0], rtol=1e-12)
    _close(out.cum_policy[1][i], one.cum_policy[1], rtol=1e-12)
  assert not np.allclose(out.regrets[0][0], out.regrets[0][1])


def test_bad_input_is_refused_before_compiling(factored):
  with pytest.raises(ValueError, match="public/private factorisation"):
    build_factored_tree(make_from_string("goofspiel(num_cards=3)"))
  with pytest.raises(TypeError, match="device game"):
    build_factored_tree(jaxgt.load("kuhn_poker"))
  with pytest.raises(ValueError, match="over 5 public states"):
    build_factored_tree(make_from_string("kuhn_poker"), max_states=5)
  ft, _ = factored("kuhn_poker")
  pcfr = public_cfr.PublicTreeCFR(jaxgt.cfr_plus())
  with pytest.raises(ValueError, match="root_reach"):
    pcfr.init(ft, root_reach=(np.ones(2), np.ones(3)))
  with pytest.raises(ValueError, match="non-negative"):
    pcfr.init(ft, root_reach=(np.array([1.0, -1.0, 0.0]), np.ones(3)))
  with pytest.raises(ValueError, match="num_steps"):
    pcfr.run(ft, pcfr.init(ft), -1)
  leduc, _ = factored("leduc_poker")
  with pytest.raises(ValueError, match="another game"):
    pcfr.run(leduc, pcfr.init(ft), 1)
  with pytest.raises(ValueError, match="another game"):
    public_cfr.exploitability(leduc, pcfr.policy(ft, pcfr.init(ft)))
  with pytest.raises(TypeError, match="CFR-family"):
    public_cfr.PublicTreeCFR("cfr+")


def _pairwise_terminal_values(self, s, player, opp_reach):
  """The protocol's optional hook computed pair by pair from the game's own returns."""
  k0, k1 = (jnp.arange(k) for k in self.num_private)
  pairs = jax.vmap(lambda a: jax.vmap(lambda b: self.returns(
      self.with_private(self.with_private(s, 0, a), 1, b))[0])(k1))(k0)
  m = self.private_chance(s) * pairs
  return m @ opp_reach if player == 0 else -(m.T @ opp_reach)


class KuhnWithTerminalValues(jaxgt.games.kuhn.KuhnPoker):
  terminal_values = _pairwise_terminal_values


class LeducWithTerminalValues(jaxgt.games.leduc.LeducPoker):
  terminal_values = _pairwise_terminal_values


@pytest.mark.parametrize("name,cls", [
    ("kuhn_poker", KuhnWithTerminalValues),
    pytest.param("leduc_poker", LeducWithTerminalValues, marks=pytest.mark.slow)])
def test_terminal_values_hook_gives_the_payoff_matrices_iterates(factored, name, cls):
  """A game whose terminal values come from the game (the factored tree then keeps no payoff
  matrices) runs the same iterates as with the matrices."""
  ft, _ = factored(name)
  hooked = build_factored_tree(cls())
  assert hooked.payoff is None and ft.payoff is not None
  pcfr = public_cfr.PublicTreeCFR(jaxgt.cfr_plus(dtype="float64"))
  a = pcfr.run(ft, pcfr.init(ft), 30)
  b = pcfr.run(hooked, pcfr.init(hooked), 30)
  for p in (0, 1):
    _close(b.regrets[p], a.regrets[p], rtol=1e-10)
    _close(b.cum_policy[p], a.cum_policy[p], rtol=1e-10)
  pol = pcfr.policy(ft, a)
  _close(public_cfr.exploitability(hooked, pol), public_cfr.exploitability(ft, pol), rtol=1e-12)


def _holdem_terminals(game, count, seed):
  """Terminal states of ``count`` random hold'em games (calls and raises, some folds)."""
  from jaxgt.games.base import TERMINAL
  rng = np.random.default_rng(seed)
  step = jax.jit(game.step)
  out = []
  for _ in range(count):
    s = game.init()
    while int(game.current_player(s)) != TERMINAL:
      p = int(game.current_player(s))
      if p < 0:
        probs = np.asarray(game.chance_probs(s))
        a = rng.choice(len(probs), p=probs / probs.sum())
      else:
        w = np.where(np.asarray(game.legal_mask(s)), [0.08, 0.6, 0.32], 0.0)
        a = rng.choice(3, p=w / w.sum())
      s = step(s, jnp.int32(a))
    out.append(s)
  return out


def test_holdem_terminal_values_equal_the_pairwise_returns():
  """The sort-and-card-removal values against the definition: private_chance times the
  returns of every pair of hands (through with_private), for sampled hands."""
  game = make_from_string("limit_holdem")
  values = jax.jit(game.terminal_values, static_argnums=1)
  pair_returns = jax.jit(jax.vmap(lambda s, a, b: game.returns(
      game.with_private(game.with_private(s, 0, a), 1, b))[0], in_axes=(None, 0, 0)))
  rng = np.random.default_rng(3)
  kinds = set()
  for s in _holdem_terminals(game, 6, seed=5):
    kinds.add(int(s.folded) >= 0)
    reach = rng.random(1326)
    chance = np.asarray(game.private_chance(s))
    opp = np.arange(1326)
    for p in (0, 1):
      got = np.asarray(values(s, p, reach))
      for k in rng.choice(1326, 8, replace=False):
        if p == 0:
          want = np.sum(chance[k] * np.asarray(pair_returns(s, np.full(1326, k), opp)) * reach)
        else:
          want = -np.sum(chance[:, k] * np.asarray(pair_returns(s, opp, np.full(1326, k)))
                         * reach)
        assert abs(got[k] - want) <= 1e-9 * max(1.0, abs(want))
  assert kinds == {True, False}  # both folds and showdowns were checked


def _river_root(game, seed, street=3):
  """A hold'em state at the first decision of ``street`` (3: the river), both players checking
  or calling."""
  rng = np.random.default_rng(seed)
  s = game.init()
  while not (int(s.round) == street and int(game.current_player(s)) >= 0):
    if int(game.current_player(s)) < 0:
      probs = np.asarray(game.chance_probs(s))
      s = game.step(s, jnp.int32(rng.choice(len(probs), p=probs / probs.sum())))
    else:
      s = game.step(s, jnp.int32(1))
  return s


def test_holdem_river_subgame_solves_on_factored_ranges():
  game = make_from_string("limit_holdem")
  root = _river_root(game, seed=1)
  tree = build_factored_tree(game, root=root)
  assert tree.payoff is None and tree.num_private == (1326, 1326)
  # a player's ranges: hands meeting the board are never dealt there
  board = set(np.asarray(root.cards[4:]).tolist())
  dealt = tree.chance_mass[0][0] > 0
  from jaxgt.games.holdem import HAND_CARDS
  assert np.array_equal(dealt, [not (set(h) & board) for h in HAND_CARDS.tolist()])
  rng = np.random.default_rng(0)
  ranges = (rng.random(1326), rng.random(1326))
  pcfr = public_cfr.PublicTreeCFR(jaxgt.cfr_plus())
  uniform = pcfr.policy(tree, pcfr.init(tree, root_reach=ranges))
  start = float(public_cfr.exploitability(tree, uniform, ranges))
  state = pcfr.run(tree, pcfr.init(tree, root_reach=ranges), 300)
  policy = pcfr.policy(tree, state)
  end = float(public_cfr.exploitability(tree, policy, ranges))
  assert end < 0.02 * start
  # each best response is at least what the policy gets (zero-sum)
  value = float(public_cfr.expected_value(tree, policy, ranges))
  br0, br1 = (float(v) for v in public_cfr.best_response_values(tree, policy, ranges))
  assert br0 >= value - 1e-4 and br1 >= -value - 1e-4


def test_a_root_must_be_a_dealt_state_of_the_game():
  game = make_from_string("kuhn_poker")
  with pytest.raises(ValueError, match="after both players' private deals"):
    build_factored_tree(game, root=game.init())
  with pytest.raises(ValueError, match="not a state of"):
    build_factored_tree(game, root=make_from_string("leduc_poker").init())
  holdem = make_from_string("limit_holdem")
  with pytest.raises(ValueError, match="public chance below the root"):
    build_factored_tree(holdem, root=_river_root(holdem, seed=2, street=2))
