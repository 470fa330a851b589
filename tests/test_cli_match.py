"""``jaxgt match`` and ``jaxgt construct``: their command-line contract (docs/CLI.md)."""

import functools
import json

import numpy as np
import pytest

import jaxgt
from jaxgt.cli import main
from jaxgt.core.evaluate import evaluate
from jaxgt.evaluation.episode_log import read_episodes

pyspiel = pytest.importorskip("pyspiel")


@functools.lru_cache(maxsize=None)
def _kuhn_policies(tmp):
  """Two fixed Kuhn policies saved under ``tmp``: a short CFR+ average and a biased policy."""
  g = jaxgt.load("kuhn_poker")
  a = jaxgt.solve(g, "cfr+", iterations=20, eval_every=0).policy
  # renormalised in float64 (the solve ran in float32), as construction renormalises its rows
  a = jaxgt.Policy.from_arrays(g, [p / p.sum(-1, keepdims=True) for p in a.probs])
  # b: bets/calls with probability 0.8 wherever it can (action 1), else uniform
  probs = []
  for pt in g.tree.players:
    legal = np.asarray(pt.legal, np.float64)
    row = np.where(legal[:, 1:2] > 0, np.array([[0.2, 0.8]]), legal / legal.sum(-1, keepdims=True))
    probs.append(row)
  b = jaxgt.Policy.from_arrays(g, probs)
  paths = (f"{tmp}/a.npz", f"{tmp}/b.npz")
  a.save(paths[0])
  b.save(paths[1])
  return g, a, b, paths


@pytest.fixture(scope="module")
def kuhn(tmp_path_factory):
  return _kuhn_policies(str(tmp_path_factory.mktemp("policies")))


def _value(g, x, y):
  """Exact value to player 0 of x playing player 0 and y player 1 (jaxgt.core.evaluate)."""
  return evaluate(g, (x.probs[0], y.probs[1]), dtype="float64").value


def _replay(game_string, episodes):
  """Replays every logged history in pyspiel: legal at each step, terminal with the logged returns."""
  game = pyspiel.load_game(game_string)
  for ep in episodes:
    state = game.new_initial_state()
    for a in ep.history:
      if state.is_chance_node():
        assert a in [o for o, _ in state.chance_outcomes()], (ep.history, a)
      else:
        assert a in state.legal_actions(), (ep.history, a)
      state.apply_action(a)
    assert state.is_terminal(), ep.history
    np.testing.assert_allclose(state.returns(), ep.returns, atol=1e-9)


def test_match_json_log_and_seats(kuhn, tmp_path, capsys):
  g, a, b, (pa, pb) = kuhn
  log = tmp_path / "episodes.jsonl"
  n = 4000
  assert main(["match", "kuhn_poker", f"policy(path={pa})", f"policy(path={pb})", "--matches",
               str(n), "--seed", "3", "--json", "--log", str(log)]) == 0
  out = capsys.readouterr().out
  assert len(out.strip().splitlines()) == 1
  doc = json.loads(out)
  assert set(doc) == {"game", "agents", "episodes", "seed", "duplicate", "mean", "ci95",
                      "win_rate", "win_ci95", "wins", "draws", "losses", "units"}
  assert doc["episodes"] == n and doc["duplicate"] is False
  assert doc["game"] == "kuhn_poker" and doc["agents"] == [f"policy(path={pa})",
                                                            f"policy(path={pb})"]
  assert doc["wins"] + doc["draws"] + doc["losses"] == n
  assert doc["win_rate"] == pytest.approx((doc["wins"] + 0.5 * doc["draws"]) / n)
  lo, hi = doc["ci95"]
  v_as_p0, v_as_p1 = _value(g, a, b), -_value(g, b, a)  # agent0's exact value in each seat
  want = 0.5 * (v_as_p0 + v_as_p1)
  assert lo < doc["mean"] < hi and lo <= want <= hi, (doc, want)

  eps = read_episodes(log)
  assert len(eps) == n and {e.game for e in eps} == {"kuhn_poker"}
  r = np.array([e.returns for e in eps])
  np.testing.assert_allclose(r[:, 0], -r[:, 1])
  # returns are players 0 and 1 of the game; agent0 sits as player 0 in the even matches
  seats = np.arange(n) % 2
  assert [e.seats for e in eps] == [(int(s), 1 - int(s)) for s in seats]  # the "seats" field
  agent0 = r[np.arange(n), seats]
  assert agent0.mean() == pytest.approx(doc["mean"], abs=1e-12)
  assert np.mean((agent0 > 0) + 0.5 * (agent0 == 0)) == pytest.approx(doc["win_rate"], abs=1e-12)
  for seat, v in ((0, v_as_p0), (1, v_as_p1)):
    x = agent0[seats == seat]
    assert abs(x.mean() - v) < 3.5 * x.std(ddof=1) / np.sqrt(len(x)), (seat, x.mean(), v)
  # agent0 wins in both seats, so unswapped seats, or returns from agent0's view rather than the
  # players', would put the odd matches' mean near -v_as_p1 and fail the check above
  assert v_as_p0 > 0.05 and v_as_p1 > 0.05
  _replay("kuhn_poker", eps)


def test_match_text_plot_and_leduc_log_replays(tmp_path, capsys):
  log, png = tmp_path / "leduc.jsonl", tmp_path / "run.png"
  assert main(["match", "leduc_poker", "random", "random", "--matches", "60", "--block", "25",
               "--log", str(log), "--plot", str(png)]) == 0
  out = capsys.readouterr().out
  assert "mean payoff of random:" in out and "win rate of random:" in out
  assert "as player 0:" in out and "as player 1:" in out
  assert png.stat().st_size > 1000
  eps = read_episodes(log)
  assert len(eps) == 60 and {e.game for e in eps} == {"leduc_poker"}
  assert any(len(e.history) > 6 for e in eps)  # some reach the second round (a public card)
  _replay("leduc_poker", eps)


def test_duplicate_matches_deal_each_pair_the_same_cards(kuhn, tmp_path, capsys):
  g, a, b, (pa, pb) = kuhn
  log, png = tmp_path / "dup.jsonl", tmp_path / "dup.png"
  assert main(["match", "kuhn_poker", f"policy(path={pa})", f"policy(path={pb})", "--matches",
               "400", "--duplicate", "--json", "--log", str(log), "--plot", str(png)]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert doc["duplicate"] is True and doc["episodes"] == 400
  eps = read_episodes(log)
  for x, y in zip(eps[0::2], eps[1::2]):
    assert x.history[:2] == y.history[:2] and x.seats == (0, 1) and y.seats == (1, 0)
  agent0 = np.array([e.returns[e.seats[0]] for e in eps])
  pairs = agent0.reshape(-1, 2).mean(axis=1)
  half = 1.96 * pairs.std(ddof=1) / np.sqrt(len(pairs))
  assert doc["ci95"] == pytest.approx([agent0.mean() - half, agent0.mean() + half])
  assert png.stat().st_size > 1000
  assert main(["match", "kuhn_poker", "random", "random", "--matches", "6", "--duplicate"]) == 0
  assert "3 duplicate pairs" in capsys.readouterr().out


def test_construct_of_a_policy_agent(kuhn, tmp_path, capsys):
  g, a, _, (pa, _) = kuhn
  js, ref = tmp_path / "constructed.json", tmp_path / "exported.json"
  assert main(["construct", "kuhn_poker", f"policy(path={pa})", "--seeds", "2", "--json",
               "--export-openspiel", str(js)]) == 0
  doc = json.loads(capsys.readouterr().out)
  want = evaluate(g, a, dtype="float64").exploitability
  assert doc["seeds"] == 2 and set(doc["exploitability"]) == {"min", "avg", "max"}
  for k in ("min", "avg", "max"):
    assert doc["exploitability"][k] == pytest.approx(want, abs=1e-12)
  assert main(["export", pa, "--openspiel", str(ref)]) == 0
  got, exp = json.loads(js.read_text()), json.loads(ref.read_text())
  assert got["game"] == exp["game"] and got["policy"].keys() == exp["policy"].keys()
  for key, pairs in exp["policy"].items():
    np.testing.assert_allclose(got["policy"][key], pairs, atol=1e-12)


def test_construct_text_output_of_a_search_agent(capsys):
  assert main(["construct", "kuhn_poker", "oos(iterations=20)", "--seeds", "2"]) == 0
  out = capsys.readouterr().out
  lines = [l for l in out.splitlines() if l.strip().startswith("seed ")]
  assert len(lines) == 2
  vals = [float(l.split()[3]) for l in lines]
  assert all(0 < v < 1 for v in vals)
  assert f"min {min(vals):.6g}" in out and f"max {max(vals):.6g}" in out


def test_bad_arguments(kuhn, capsys):
  _, _, _, (pa, _) = kuhn
  assert main(["match", "kuhn_poker", "random", "random", "--matches", "3"]) == 2
  assert "--matches must be an even integer" in capsys.readouterr().err
  assert main(["construct", "kuhn_poker", "random", "--seeds", "0"]) == 2
  assert "--seeds must be positive" in capsys.readouterr().err
  assert main(["match", "leduc_poker", f"policy(path={pa})", "random"]) == 2
  assert "policy is for game kuhn_poker" in capsys.readouterr().err
  assert main(["construct", "rps_plus", "random", "--export-openspiel", "x.json"]) == 2
  assert "no OpenSpiel equivalent" in capsys.readouterr().err
