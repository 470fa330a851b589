"""Importance-sampling strategy evaluation (Bowling et al. 2008) and AIVAT.

Checked against what the estimators did not compute: a brute-force reading of
the paper's Eq. 3 over explicit sets U(z) (built from the game's own states,
with the opponent's strategy in the weights), the exact value of each pairing
from ``core.evaluate`` (the expectation of every estimator over the logging
distribution must equal it: unbiasedness, Theorem 1), and sampled logs.
"""

import math

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt.core.evaluate import evaluate
from jaxgt.evaluation import importance
from jaxgt.evaluation.episode_log import read_episodes, write_episodes
from jaxgt.games.base import CHANCE, TERMINAL
from oracle_games import oracle_of
from jaxgt.policy import Policy


def _random_policy(compiled, seed):
  return importance.random_profile(compiled, seed)


def _pair(mine, theirs, player):
  prof = [None, None]
  prof[player], prof[1 - player] = mine[player], theirs[1 - player]
  return tuple(prof)


def _true_value(compiled, profile, player):
  v = evaluate(compiled, profile).value
  return v if player == 0 else -v


def _terminal_reach(compiled, profile):
  tree = compiled.tree
  reach = np.asarray(tree.terminal_chance, np.float64).copy()
  for p in (0, 1):
    seq = np.asarray(tree.terminal_seq[p])
    flat = np.concatenate([np.asarray(profile[p]).reshape(-1), [1.0]])
    # sequence-form realization of each terminal's sequence: product along parent sequences
    pt = tree.players[p]
    A = tree.num_actions
    real = np.ones(pt.num_infostates * A + 1)
    parent = np.asarray(pt.parent_seq)
    for lo, hi in pt.levels:
      for i in range(lo, hi):
        real[i * A:(i + 1) * A] = real[parent[i]] * flat[i * A:(i + 1) * A]
    reach = reach * real[seq]
  return reach


# ------------------------------------------------------------------ brute force (Eq. 3 by definition)
def _enumerate(compiled):
  """Per terminal: its state path [(state, acting player, action, chance prob)], from the
  game's Python oracle."""
  game = oracle_of(compiled.game)
  out = []

  def rec(s, path):
    p = game.current_player(s)
    if p == TERMINAL:
      out.append((path, game.returns(s)[0]))
      return
    if p == CHANCE:
      for a, q in game.chance_outcomes(s):
        rec(game.next_state(s, a), path + [(s, p, a, q)])
    else:
      for a in game.legal_actions(s):
        rec(game.next_state(s, a), path + [(s, p, a, 1.0)])
  rec(game.initial_state(), [])
  return out


def _brute_force(compiled, estimator, target, logged, opponent, player, values=None,
                 aivat=False):
  """[T] V_U(z) = sum_{z' : z in U(z')} V(z') pi(z') / pi-hat(U(z')), U from the paper's text."""
  game, tree = oracle_of(compiled.game), compiled.tree
  opp = 1 - player
  index = [compiled.infostate_index(p) for p in (0, 1)]
  terms = _enumerate(compiled)

  def prob(path, sig_i, upto=None):
    out = {"c": 1.0, "i": 1.0, "o": 1.0}
    for s, p, a, q in path[:upto]:
      if p == CHANCE:
        out["c"] *= q
      elif p == player:
        out["i"] *= sig_i[player][index[p][game.information_state(s, p)], a]
      else:
        out["o"] *= opponent[opp][index[p][game.information_state(s, p)], a]
    return out

  def tid(path):
    h = 0
    for _, _, a, _ in path:
      h = tree.children[h, a]
    return int(tree.history_terminal[h])

  def s_len(path):  # |S_-i(z)|: after it only player i and chance act
    last = [k for k, (_, p, _, _) in enumerate(path) if p == opp]
    return last[-1] + 1 if last else 0

  def view(path, n):  # what the opponent saw of the first n steps (n < len: a history)
    states = [game.information_state(s, opp) for s, _, _, _ in path[:n]]
    nxt = (game.information_state(path[n][0], opp) if n < len(path) else None)
    acts = tuple(a if p != CHANCE else None for _, p, a, _ in path[:n])
    return (n, tuple(states), nxt, acts if n == len(path) else None)

  def terminal_view(path):
    n = len(path)
    return (n, game.information_state(path[-1][0], opp), path[-1][2], path[-1][1])

  T = len(terms)
  V = np.zeros(T)
  ids = [tid(path) for path, _ in terms]
  for k, (path, u0) in enumerate(terms):
    u = u0 if player == 0 else -u0
    if values is not None:  # DIVAT / AIVAT control variates along the path
      h = 0
      for s, p, a, q in path:
        kids = [c for c in tree.children[h] if c >= 0]
        if p == CHANCE:
          expect = sum(tree.chance_probs[h, tree.action[c]] * values[c] for c in kids)
        elif p == player and aivat:
          row = target[player][index[p][game.information_state(s, p)]]
          expect = sum(row[tree.action[c]] * values[c] for c in kids)
        else:
          expect = None
        c = tree.children[h, a]
        if expect is not None:
          u -= values[c] - expect
        h = c
    V[ids[k]] = u

  def in_u_private(zp, z):  # the opponent cannot tell the terminals apart
    return terminal_view(z) == terminal_view(zp) and len(z) == len(zp) and all(
        game.information_state(a[0], opp) == game.information_state(b[0], opp)
        for a, b in zip(z, zp))

  def in_u(zp, z):  # is terminal path z in U(zp)?
    if estimator == "basic":
      return zp is z
    if estimator == "early-folds":
      n = s_len(zp)
      return len(z) >= n and [x[2] for x in z[:n]] == [x[2] for x in zp[:n]]
    if estimator == "all-cards":
      return in_u_private(zp, z)
    n = s_len(zp)  # combined and aivat: a prefix of z in Q(zp)
    if n == len(zp):  # S_-i(zp) is zp itself (the opponent moved last): Q(zp) = terminals ~ zp
      return in_u_private(zp, z)
    return len(z) > n and all(
        game.information_state(a[0], opp) == game.information_state(b[0], opp)
        for a, b in zip(z[:n + 1], zp[:n + 1]))

  est = np.zeros(T)
  paths = [path for path, _ in terms]
  for zp in paths:
    members = [z for z in paths if in_u(zp, z)]
    pr = prob(zp, target)
    w_num = pr["c"] * pr["i"] * pr["o"]
    den = 0.0
    for z in members:
      q = prob(z, logged)
      den += q["c"] * q["i"] * q["o"]
    if den == 0:
      continue
    for z in members:
      est[ids[paths.index(z)]] += V[tid(zp)] * w_num / den
  return est


@pytest.mark.parametrize("estimator", importance.ESTIMATORS)
@pytest.mark.parametrize("player", [0, 1])
@pytest.mark.parametrize("name", [
    "kuhn_poker", "rps_plus", pytest.param("goofspiel(num_cards=3)", marks=pytest.mark.slow)])
def test_per_terminal_values_match_eq3_by_definition(name, estimator, player):
  """Private information includes hidden moves (II-Goofspiel bids, RPS+'s first move)."""
  kuhn = jaxgt.load(name)
  target, logged, opponent = (_random_policy(kuhn, s) for s in (1, 2, 3))
  values = None
  baseline = None
  if estimator == "aivat":
    baseline = "bc"
    values = np.asarray(importance.baseline_values(kuhn, "bc", player))
  got = importance.estimator_table(kuhn, target, player=player, logged_policy=logged,
                                   estimator=estimator, baseline=baseline)
  want = _brute_force(kuhn, estimator, target, logged, opponent, player, values,
                      aivat=estimator == "aivat")
  np.testing.assert_allclose(np.asarray(got.value), want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, baseline", [
    ("leduc_poker", "none"), ("leduc_poker", "bc"), ("leduc_poker", "exact"),
    pytest.param("liars_dice(numdice=1,dice_sides=3)", "exact", marks=pytest.mark.slow),
    pytest.param("goofspiel(num_cards=4)", "bc", marks=pytest.mark.slow)])
@pytest.mark.parametrize("player", [0, 1])
def test_every_estimator_is_unbiased_exactly(name, player, baseline):
  """E over the logging distribution of V_U(z) equals the exact value of the evaluated pairing."""
  leduc = jaxgt.load(name)
  target, logged, opponent = (_random_policy(leduc, s) for s in (4, 5, 6))
  reference = _random_policy(leduc, 7)
  true = _true_value(leduc, _pair(target, opponent, player), player)
  for logging in (target, logged):  # on-policy, off-policy
    reach = _terminal_reach(leduc, _pair(logging, opponent, player))
    for est in importance.ESTIMATORS:
      if est == "aivat" and baseline == "none":
        continue
      for partial in (False, True) if est == "aivat" else (False,):
        table = importance.estimator_table(leduc, target, player=player, logged_policy=logging,
                                           estimator=est, baseline=baseline,
                                           baseline_policy=reference, partial_information=partial)
        assert float(reach @ np.asarray(table.value)) == pytest.approx(true, abs=1e-10), est


def test_on_policy_basic_is_the_monte_carlo_mean():
  leduc = jaxgt.load("leduc_poker")
  profile = _random_policy(leduc, 8)
  actions, returns = importance.sample_episodes(leduc, profile, 2000, jax.random.key(0))
  for player in (0, 1):
    out = importance.estimate_episodes(leduc, [tuple(a[a >= 0]) for a in actions], profile,
                                       player=player)
    assert out.estimate == pytest.approx(returns[:, player].mean(), abs=1e-12)
    assert out.stderr == pytest.approx(returns[:, player].std(ddof=1) / math.sqrt(2000))


def _experiment(compiled, target, logged, opponent, player, reps, hands, key, partial=False):
  actions, returns = importance.sample_episodes(compiled, _pair(logged, opponent, player),
                                                reps * hands, key)
  if partial:
    actions = importance.partial_view(compiled, actions, player)
  out = {}
  for est, base in [("basic", "none"), ("basic", "bc"), ("early-folds", "none"),
                    ("all-cards", "none"), ("combined", "bc"), ("aivat", "exact")]:
    table = importance.estimator_table(compiled, target, player=player, logged_policy=logged,
                                       estimator=est, baseline=base, baseline_policy=opponent)
    out[est, base] = importance.episode_values(compiled, table, actions, returns,
                                               player=player, logged=logged[player])
  return out


@pytest.mark.parametrize("off_policy", [False, True])
@pytest.mark.parametrize("hands", [100, pytest.param(1000, marks=pytest.mark.slow)])
def test_sampled_bias_within_three_standard_errors(off_policy, hands):
  """Repeated matches sampled through the walker, located in the tree: the mean of the match
  estimates is within 3 of its standard errors of the exact value (20 matches of ``hands``)."""
  leduc = jaxgt.load("leduc_poker")
  target, logged, opponent = (_random_policy(leduc, s) for s in (11, 12, 13))
  player, reps = 1, 20
  true = _true_value(leduc, _pair(target, opponent, player), player)
  out = _experiment(leduc, target, logged if off_policy else target, opponent, player, reps,
                    hands, jax.random.key(3))
  for name, values in out.items():
    matches = values.reshape(reps, hands).mean(1)
    bias = matches.mean() - true
    assert abs(bias) < 3 * matches.std(ddof=1) / math.sqrt(reps), (name, bias)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_exact_moments_and_the_papers_ordering(name):
  """Exact standard deviations over the logging distribution (no sampling noise), on- and
  off-policy, both seats: All Cards is Basic's conditional expectation given the opponent's view,
  so its variance is never larger (Rao-Blackwell; with or without a baseline), and on Leduc the
  paper's ordering holds exactly: AC+EF+BC-DIVAT below All Cards, AIVAT with exact values below
  AC+EF+BC-DIVAT."""
  game = jaxgt.load(name)
  target, logged, opponent = (_random_policy(game, s) for s in (11, 12, 13))
  for player in (0, 1):
    for logging in (target, logged):
      reach = importance.terminal_reach(game, _pair(logging, opponent, player))
      # against the sequence-form reach of the test's own helper
      np.testing.assert_allclose(reach, _terminal_reach(game, _pair(logging, opponent, player)),
                                 rtol=1e-10, atol=1e-15)
      std = {}
      for est, base in [("basic", "none"), ("all-cards", "none"), ("basic", "bc"),
                        ("all-cards", "bc"), ("combined", "bc"), ("aivat", "exact")]:
        table = importance.estimator_table(game, target, player=player, logged_policy=logging,
                                           estimator=est, baseline=base, baseline_policy=opponent)
        mean, std[est, base] = importance.exact_moments(table.value, reach)
        v = np.asarray(table.value)
        assert std[est, base] == pytest.approx(math.sqrt(reach @ v ** 2 - (reach @ v) ** 2))
      for base in ("none", "bc"):
        assert std["all-cards", base] <= std["basic", base] * (1 + 1e-12), (player, base)
      if name == "leduc_poker":
        assert std["combined", "bc"] < std["all-cards", "none"] < std["basic", "none"]
        assert std["aivat", "exact"] < std["combined", "bc"]
      # partial-information AIVAT: a function of player i's view (the same value for every
      # completion of what the log hides), unbiased, and the full-information one is not
      every = importance.terminal_episodes(game)
      hidden = importance.partial_view(game, every, player)
      assert np.any(hidden == importance.UNOBSERVED)
      u0 = np.asarray(game.tree.terminal_payoff)
      true = _true_value(game, _pair(target, opponent, player), player)
      for partial in (True, False):
        table = importance.estimator_table(game, target, player=player, logged_policy=logging,
                                           estimator="aivat", baseline="exact",
                                           baseline_policy=opponent, partial_information=partial)
        seen = importance.episode_values(game, table, hidden, np.stack([u0, -u0], 1),
                                         player=player)
        bias = importance.exact_moments(seen, reach)[0] - true
        if partial:
          np.testing.assert_allclose(seen, np.asarray(table.value), atol=1e-12)
          assert abs(bias) < 1e-10
        else:
          assert abs(bias) > 1e-4


def test_partial_information_basic_is_unchanged_and_completions_are_consistent():
  leduc = jaxgt.load("leduc_poker")
  target, opponent = _random_policy(leduc, 21), _random_policy(leduc, 22)
  actions, returns = importance.sample_episodes(leduc, _pair(target, opponent, 0), 2000,
                                                jax.random.key(5))
  hidden = importance.partial_view(leduc, actions, 0)
  assert np.any(hidden == importance.UNOBSERVED)  # folds hide the opponent's card
  # Basic keeps its value (Table 3: 0*); on-policy All Cards without a baseline too: at a fold
  # every opponent-indistinguishable terminal pays the same, so the weights sum to one
  for est in ("basic", "all-cards"):
    table = importance.estimator_table(leduc, target, player=0, estimator=est)
    full = importance.episode_values(leduc, table, actions, returns, player=0)
    part = importance.episode_values(leduc, table, hidden, returns, player=0)
    np.testing.assert_allclose(part, full, atol=1e-12)
  # with a baseline the completions' control variates differ: the partial variant is biased
  table = importance.estimator_table(leduc, target, player=0, estimator="basic", baseline="bc")
  full = importance.episode_values(leduc, table, actions, returns, player=0)
  part = importance.episode_values(leduc, table, hidden, returns, player=0)
  assert np.max(np.abs(part - full)) > 1e-3
  # AIVAT: the full-information control variates depend on the hidden card; the
  # partial-information variant uses player 0's view only, so every completion of a hidden card
  # gets the same value and the partial log estimates exactly what the full log does
  hist = [[None if a == importance.UNOBSERVED else int(a) for a in row if a != importance.PADDING]
          for row in hidden]
  out = importance.estimate_episodes(leduc, hist, target, player=0, estimator="aivat",
                                     baseline="exact", baseline_policy=opponent)
  table = importance.estimator_table(leduc, target, player=0, estimator="aivat", baseline="exact",
                                     baseline_policy=opponent, partial_information=True)
  full = importance.episode_values(leduc, table, actions, returns, player=0)
  np.testing.assert_allclose(out.values, full, atol=1e-12)
  biased = importance.estimate_episodes(leduc, hist, target, player=0, estimator="aivat",
                                        baseline="exact", baseline_policy=opponent,
                                        partial_information=False)
  assert np.max(np.abs(biased.values - full)) > 1e-3
  # exactly the folds hide the opponent's card (step 1: player 1's card); player 0's stays visible
  partial = (hidden == importance.UNOBSERVED).any(1)
  last = np.take_along_axis(actions, (actions != importance.PADDING).sum(1)[:, None] - 1, 1)[:, 0]
  assert np.array_equal(partial, last == 0) and np.any(last == 0)
  assert np.all(hidden[partial, 1] == importance.UNOBSERVED)
  assert np.all(hidden[:, 0] == actions[:, 0])


def test_value_function_may_be_a_callable():
  leduc = jaxgt.load("leduc_poker")
  target = _random_policy(leduc, 31)
  values = importance.baseline_values(leduc, "bc", 0)
  a = importance.estimator_table(leduc, target, player=0, estimator="aivat", baseline="bc")
  b = importance.estimator_table(leduc, target, player=0, estimator="aivat",
                                 baseline=lambda h: values[h])
  np.testing.assert_allclose(np.asarray(a.value), np.asarray(b.value))
  with pytest.raises(ValueError, match="one value per history"):
    importance.estimator_table(leduc, target, player=0, estimator="aivat",
                               baseline=lambda h: values[:5])
  with pytest.raises(ValueError, match="aivat needs a value function"):
    importance.estimator_table(leduc, target, player=0, estimator="aivat")
  with pytest.raises(ValueError, match="estimator must be one of"):
    importance.estimator_table(leduc, target, player=0, estimator="divat")


def test_bet_call_values_are_the_profiles_exact_values():
  leduc = jaxgt.load("leduc_poker")
  bc = importance.bet_call_profile(leduc)
  for p in (0, 1):  # facing a bet (fold legal): call; otherwise bet
    legal = np.asarray(leduc.tree.players[p].legal)
    np.testing.assert_array_equal(np.argmax(bc[p], 1), np.where(legal[:, 0], 1, 2))
  values = importance.baseline_values(leduc, "bc", 1)
  assert float(values[0]) == pytest.approx(-evaluate(leduc, bc).value, abs=1e-12)


# ------------------------------------------------------------------ bad input
def _log(tmp_path, lines):
  path = tmp_path / "log.jsonl"
  path.write_text("".join(line + "\n" for line in lines))
  return read_episodes(path)


def test_bad_logs_name_the_line(tmp_path):
  kuhn = jaxgt.load("kuhn_poker")
  pol = Policy.from_arrays(kuhn, _random_policy(kuhn, 1))
  ok = '{"game": "kuhn_poker", "history": [0, 1, 0, 0], "returns": [-1, 1]}'
  cases = [
      ('{"game": "kuhn_poker", "history": [0, 1, 0, 5], "returns": [-1, 1]}', "action of player 1 5 is illegal"),
      ('{"game": "kuhn_poker", "history": [0, 0, 0, 0], "returns": [-1, 1]}', "chance outcome 0 is illegal"),
      ('{"game": "kuhn_poker", "history": [0, 1, 0], "returns": [-1, 1]}', "truncated"),
      ('{"game": "kuhn_poker", "history": [0, 1, null, 0], "returns": [-1, 1]}', "only for chance"),
      ('{"game": "kuhn_poker", "history": [0, 1, 0, 0, 1, 1], "returns": [-1, 1]}', "longer than"),
      ('{"game": "kuhn_poker", "history": [0, 1, 0, 0], "returns": [3, -3]}', "not the payoff"),
  ]
  for line, message in cases:
    eps = _log(tmp_path, [ok, line])
    with pytest.raises(ValueError, match=message):
      importance.estimate_episodes(kuhn, eps, pol, player=0)
    with pytest.raises(ValueError, match="line 2"):
      importance.estimate_episodes(kuhn, eps, pol, player=0)


def test_other_game_and_zero_probability_logged_action(tmp_path):
  kuhn, leduc = jaxgt.load("kuhn_poker"), jaxgt.load("leduc_poker")
  pol = Policy.from_arrays(kuhn, _random_policy(kuhn, 1))
  eps = _log(tmp_path, ['{"game": "leduc_poker", "history": [0, 1, 1, 1], "returns": [0, 0]}'])
  with pytest.raises(ValueError, match="log is for game leduc_poker"):
    importance.estimate_episodes(kuhn, eps, pol, player=0)
  with pytest.raises(ValueError, match="policy is for game"):
    importance.estimate_episodes(leduc, eps, pol, player=0)
  # player 0 always passes in the logging strategy, but the log shows a bet
  never_bet = tuple(np.array(p) for p in _random_policy(kuhn, 1))
  never_bet[0][:] = [1.0, 0.0]
  eps = _log(tmp_path, ['{"game": "kuhn_poker", "history": [0, 1, 0, 0], "returns": [-1, 1]}',
                        '{"game": "kuhn_poker", "history": [0, 1, 1, 0], "returns": [1, -1]}'])
  with pytest.raises(ValueError, match=r"line 2: the logging strategy gives probability 0 to step 2"):
    importance.estimate_episodes(kuhn, eps, pol, player=0, logged_policy=never_bet)


def test_log_round_trip_through_write_episodes(tmp_path):
  leduc = jaxgt.load("leduc_poker")
  profile = _random_policy(leduc, 41)
  actions, returns = importance.sample_episodes(leduc, profile, 2000, jax.random.key(9))
  hidden = importance.partial_view(leduc, actions, 1)
  hist = [[None if a == importance.UNOBSERVED else int(a) for a in row if a != importance.PADDING]
          for row in hidden]
  path = tmp_path / "log.jsonl"
  write_episodes(path, "leduc_poker", hist, returns)
  eps = read_episodes(path)
  from_file = importance.estimate_episodes(leduc, eps, profile, player=1, estimator="all-cards")
  table = importance.estimator_table(leduc, profile, player=1, estimator="all-cards")
  direct = importance.episode_values(leduc, table, hidden, returns, player=1)
  assert from_file.estimate == pytest.approx(direct.mean(), abs=1e-12)
  assert from_file.episodes == 2000
