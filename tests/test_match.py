"""Head-to-head match runner, round robin and the aggregate evaluation method (Lisy et al. 2015)."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.agents import Agent, PolicyAgent
from jaxgt.evaluation import aggregate, match
from jaxgt.core import sequence_form as sf
from jaxgt.agents.uct_agent import UCTAgent
from jaxgt.core.tables import acting_row
from jaxgt.solvers import uct as uct_lib


@functools.lru_cache(maxsize=None)
def _kuhn():
  g = jaxgt.load("kuhn_poker")
  eq = jaxgt.solve(g, "cfr+", iterations=300, eval_every=0, dtype="float64").policy.probs
  uni = tuple(np.asarray(p) for p in sf.uniform_policy(g.tree, np.float64))
  return g, eq, uni


def _ev(g, a, b):
  return float(sf.expected_value(g.device_tree("float64"), (jnp.asarray(a[0]), jnp.asarray(b[1]))))


@dataclasses.dataclass
class _IntAgent(Agent):
  """Not traceable: converts the history to a Python int."""

  game: object

  def act(self, key, state, history):
    legal = self.game.tree.players[int(self.game.tree.player[int(history)])].legal
    return jnp.asarray(legal[int(self.game.tree.infostate[int(history)])], jnp.float32), state


@dataclasses.dataclass
class _ZeroAgent(Agent):
  game: object

  def act(self, key, state, history):
    return jnp.zeros(self.game.tree.num_actions), state


def test_mean_matches_expected_value_and_seats():
  g, eq, uni = _kuhn()
  r = match.play(g, PolicyAgent(g, eq), PolicyAgent(g, uni), 20_000, jax.random.key(0))
  v0 = _ev(g, eq, uni)       # agent0 (equilibrium) as player 0
  v1 = -_ev(g, uni, eq)      # agent0 as player 1
  np.testing.assert_array_equal(r.seats, np.arange(20_000) % 2)
  assert abs(r.mean - 0.5 * (v0 + v1)) < 3 * r.stderr, (r.mean, v0, v1, r.stderr)
  for seat, v in ((0, v0), (1, v1)):
    x = r.payoffs[r.seats == seat]
    assert abs(x.mean() - v) < 3 * x.std(ddof=1) / np.sqrt(len(x)), (seat, x.mean(), v)
  assert r.num_matches == 20_000 and r.ci95 == pytest.approx(1.96 * r.stderr)
  assert r.traced
  fixed = match.play(g, PolicyAgent(g, eq), PolicyAgent(g, uni), 10_000, jax.random.key(1),
                     swap_seats=False)
  assert not fixed.seats.any()
  assert abs(fixed.mean - v0) < 3 * fixed.stderr


def test_keys_reproducible_and_python_loop_identical():
  g, eq, uni = _kuhn()
  a, b = PolicyAgent(g, eq), PolicyAgent(g, uni)
  r1 = match.play(g, a, b, 64, jax.random.key(5))
  r2 = match.play(g, a, b, 64, jax.random.key(5))
  r3 = match.play(g, a, b, 64, jax.random.key(6))
  np.testing.assert_array_equal(r1.payoffs, r2.payoffs)
  assert not np.array_equal(r1.payoffs, r3.payoffs)
  rp = match.play(g, a, b, 64, jax.random.key(5), mode="python")
  assert not rp.traced
  np.testing.assert_array_equal(r1.payoffs, rp.payoffs)


def test_blocks_play_the_same_matches_and_report_progress():
  g, eq, uni = _kuhn()
  a, b = PolicyAgent(g, eq), PolicyAgent(g, uni)
  whole = match.play(g, a, b, 50, jax.random.key(5))
  for mode in ("auto", "python"):
    done = []
    r = match.play(g, a, b, 50, jax.random.key(5), mode=mode, block=20,
                   progress=lambda k, n: done.append((k, n)))
    assert done == [(20, 50), (40, 50), (50, 50)]
    np.testing.assert_array_equal(r.payoffs, whole.payoffs)
    np.testing.assert_array_equal(r.histories, whole.histories)
  # the final histories are terminals whose payoff (agent0's view) is the reported payoff
  tree = g.tree
  term = np.asarray(tree.history_terminal)[whole.histories]
  assert np.all(term >= 0)
  u0 = np.asarray(tree.terminal_payoff)[term]
  np.testing.assert_array_equal(whole.payoffs, np.where(whole.seats == 0, u0, -u0))


def test_win_rate_and_running_mean():
  r = match.MatchResult.from_payoffs([2.0, 0.0, -1.0, 1.0, 0.0], [0, 1, 0, 1, 0])
  assert r.win_rate == pytest.approx(3 / 5)  # two wins, two draws at one half, one loss
  s = np.array([1, 0.5, 0, 1, 0.5])
  assert r.win_ci95 == pytest.approx(1.96 * s.std(ddof=1) / np.sqrt(5))
  mean, ci = r.running()
  np.testing.assert_allclose(mean, np.cumsum(r.payoffs) / np.arange(1, 6))
  assert np.isnan(ci[0]) and ci[-1] == pytest.approx(r.ci95)
  assert ci[2] == pytest.approx(1.96 * np.std(r.payoffs[:3], ddof=1) / np.sqrt(3))


def test_untraceable_agent_falls_back_or_raises():
  g, _, uni = _kuhn()
  with pytest.warns(UserWarning, match="not traceable"):
    r = match.play(g, _IntAgent(g), PolicyAgent(g, uni), 6, jax.random.key(0))
  assert not r.traced and r.num_matches == 6
  with pytest.warns(UserWarning), pytest.raises(ValueError, match="traceable"):
    match.play(g, _IntAgent(g), PolicyAgent(g, uni), 6, jax.random.key(0), mode="jit")


@dataclasses.dataclass
class _ObjectStateAgent(Agent):
  """Its state is a Python object, not a pytree of arrays (like continual re-solving's)."""

  game: object

  def init(self, key):
    return object()

  def act(self, key, state, history):
    return PolicyAgent(self.game, _kuhn()[2]).act(key, None, history)[0], state


def test_agent_with_a_non_array_state_plays_in_a_python_loop():
  g, _, uni = _kuhn()
  with pytest.warns(UserWarning, match="not traceable"):
    r = match.play(g, _ObjectStateAgent(g), PolicyAgent(g, uni), 4, jax.random.key(0))
  assert not r.traced and r.num_matches == 4


def test_invalid_arguments():
  g, _, uni = _kuhn()
  leduc = jaxgt.load("leduc_poker")
  a = PolicyAgent(g, uni)
  for kwargs in ({"num_matches": 0}, {"num_matches": 2.0}, {"mode": "fast"}):
    args = {"num_matches": 4, **kwargs}
    with pytest.raises(ValueError):
      match.play(g, a, a, args.pop("num_matches"), jax.random.key(0), **args)
  with pytest.raises(ValueError, match="plays"):
    match.play(leduc, a, a, 4, jax.random.key(0))
  with pytest.raises(ValueError, match="Agent"):
    match.play(g, a, uni, 4, jax.random.key(0))
  with pytest.raises(ValueError, match="probabilities"):
    match.play(g, _ZeroAgent(g), a, 4, jax.random.key(0))
  with pytest.raises(ValueError, match="decision"):
    a.act(jax.random.key(0), None, 0)  # the root is a chance node


def test_round_robin_table_and_plot(tmp_path):
  g, eq, uni = _kuhn()
  A = g.tree.num_actions
  first = tuple(np.where(np.arange(A) == np.argmax(pt.legal, -1)[:, None], 1.0, 0.0)
                for pt in g.tree.players)
  agents = {"eq": PolicyAgent(g, eq), "uniform": PolicyAgent(g, uni),
            "first": PolicyAgent(g, first)}
  rr = match.round_robin(g, agents, 4000, jax.random.key(3))
  assert rr.names == ("eq", "uniform", "first")
  off = ~np.eye(3, dtype=bool)
  np.testing.assert_allclose(rr.mean[off], -rr.mean.T[off])
  np.testing.assert_allclose(rr.ci95, rr.ci95.T)
  exact = 0.5 * (_ev(g, eq, uni) - _ev(g, uni, eq))
  assert abs(rr.mean[0, 1] - exact) < 3 * rr.results[("eq", "uniform")].stderr
  assert np.all(np.abs(np.diag(rr.mean)) < 4 * np.diag(rr.ci95) / 1.96)
  text = rr.table()
  assert "uniform" in text and "±" in text and len(text.splitlines()) == 5
  rr.plot(tmp_path / "rr.png")
  assert (tmp_path / "rr.png").stat().st_size > 1000


def test_uct_agent_plays_traced_matches():
  g, _, uni = _kuhn()
  agent = UCTAgent(g, uct_lib.smooth_uct(batch=8), episodes=64)
  r = match.play(g, agent, PolicyAgent(g, uni), 32, jax.random.key(0))
  assert r.traced and r.payoffs.shape == (32,) and np.isfinite(r.mean)
  with pytest.raises(ValueError, match="episodes"):
    UCTAgent(g, uct_lib.smooth_uct(batch=8), episodes=60)


def test_aggregate_policy_agent_gives_back_its_policy():
  g, eq, uni = _kuhn()
  rng = np.random.default_rng(0)
  pol = tuple(np.where(pt.legal, rng.random(pt.legal.shape) + 0.05, 0.0) for pt in g.tree.players)
  pol = tuple(p / p.sum(-1, keepdims=True) for p in pol)
  res = aggregate.aggregate_policy(g, PolicyAgent(g, pol), 200, jax.random.key(0))
  assert res.coverage == (1.0, 1.0)
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(res.policy[p]), pol[p], atol=1e-12)
  tree = g.device_tree("float64")
  nash_conv = float(sf.nash_conv(tree, tuple(jnp.asarray(p) for p in pol)))
  assert res.nash_conv == pytest.approx(nash_conv, abs=1e-12)
  assert res.exploitability == pytest.approx(nash_conv / 2, abs=1e-12)


@pytest.mark.slow  # over the default run's time budget
def test_aggregate_online_agent():
  g, _, _ = _kuhn()
  agent = UCTAgent(g, uct_lib.smooth_uct(batch=8), episodes=400)
  res = aggregate.aggregate_policy(g, agent, 40, jax.random.key(1))
  again = aggregate.aggregate_policy(g, agent, 40, jax.random.key(1))
  for p in (0, 1):
    np.testing.assert_array_equal(np.asarray(res.policy[p]), np.asarray(again.policy[p]))
    np.testing.assert_allclose(np.asarray(res.policy[p]).sum(-1), 1.0, atol=1e-9)
  tree = g.device_tree("float64")
  uniform = float(sf.exploitability(tree, sf.uniform_policy(tree, jnp.float64)))
  assert res.coverage[0] > 0.5 and res.exploitability < uniform, res


@dataclasses.dataclass(eq=False)
class _LoggingAgent(Agent):
  """Uniform play that logs ``(name, history)`` at every ``act`` (a debug callback when traced)."""

  game: object
  name: int
  log: list

  def init(self, key):
    self.log.append(("init", self.name))

  def act(self, key, state, history):
    if isinstance(history, int):
      self.log.append((self.name, history))
    else:
      jax.debug.callback(lambda h: self.log.append((self.name, int(h))), history)
    return acting_row(self.game.tree, sf.uniform_policy(self.game.tree, np.float64), history), state


def test_only_the_acting_agent_acts_and_chance_calls_no_agent():
  g = jaxgt.load("leduc_poker")  # chance deals, then a public card between the rounds
  player, parent = np.asarray(g.tree.player), np.asarray(g.tree.parent)
  log = []
  agents = (_LoggingAgent(g, 0, log), _LoggingAgent(g, 1, log))
  match.play(g, *agents, 6, jax.random.key(0), mode="python")  # seats alternate
  starts = [i for i, e in enumerate(log) if e == ("init", 0)]
  assert len(starts) == 6
  for m, (lo, hi) in enumerate(zip(starts, starts[1:] + [len(log)])):
    calls = [e for e in log[lo:hi] if e[0] != "init"]
    assert len(calls) >= 2
    previous = 0
    for name, h in calls:  # agent `name` plays player (name + m) % 2
      assert player[h] == (name + m) % 2, (m, name, h)
      a = parent[h]
      while a != previous:  # every decision is asked for, nothing but chance in between
        assert a >= 0 and player[a] not in (0, 1), (m, h, a)
        a = parent[a]
      previous = h
  log.clear()
  r = match.play(g, *agents, 16, jax.random.key(1), swap_seats=False)
  assert r.traced
  calls = [e for e in log if e[0] != "init"]
  assert len(calls) >= 2 * 16
  for name, h in calls:  # agent0 always plays player 0: no act at chance or the opponent's turn
    assert player[h] == name, (name, h)
