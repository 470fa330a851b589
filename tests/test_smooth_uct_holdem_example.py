"""examples/smooth_uct_holdem.py: a tiny budget runs end to end; bad options are refused before
any work."""

import json

import jax
import numpy as np
import pytest

from jaxgt.evaluation.device_policy import fixed_action_policy
from jaxgt.games import make
from script_modules import load_script


def _module():
  return load_script("examples/smooth_uct_holdem.py", "smooth_uct_holdem")


EX = _module()


@pytest.mark.slow  # about two minutes on two loaded cores: it compiles both searches and matches
def test_a_tiny_budget_writes_one_snapshot(tmp_path, capsys):
  out = tmp_path / "run"
  log = EX.main(["--minutes", "0.02", "--batch", "4", "--slice-steps", "1", "--capacity", "2000",
                 "--snapshots", "1", "--eval-matches", "8", "--lbr-games", "0", "--out",
                 str(out)])
  assert json.loads((out / EX.LOG_NAME).read_text()) == json.loads(json.dumps(log))
  assert log["config"]["grid"] == [169, 1000, 500, 200] and log["config"]["d"] == 1 / 20000
  (snap,) = log["snapshots"]
  for name in EX.SOLVERS:
    e = snap["episodes"][name]
    assert e > 0 and e % 4 == 0
    # each episode adds at most one row per player
    assert all(0 < r <= e for r in snap["rows"][name]) and snap["refused"][name] == [0, 0]
    for b in ("random", "always-call"):
      m = snap["eval"][f"{name}_vs_{b}"]
      assert m["matches"] == 8 and m["ci95"] >= 0
      # a hand moves at most 24 big blinds = 24000 mbb
      assert abs(m["mean"]) <= 24000
  assert snap["eval"]["smooth_vs_uct"]["matches"] == 8
  assert 0 < log["throughput"]["ratio_to_paper"] < 1
  assert "episodes/s" in capsys.readouterr().out


def test_the_match_measures_a_known_edge():
  # Independent counts. Call-only against itself: nobody bets (the small blind completes, the
  # big blind checks, then every round is checked), so every hand is a showdown for one big
  # blind: player 0's return is -10, 0 or +10 chips.
  game = make("limit_holdem")
  call = EX.Baseline(fixed_action_policy(game, (1,)))
  pay = np.asarray(EX.duel(game, call, call, jax.random.key(0), 64))
  assert np.all(np.abs(pay) <= 10.0) and np.all(np.abs(pay) % 10.0 == 0)
  assert set(np.unique(pay)) <= {-10.0, 0.0, 10.0}
  # Against a player folding to every bet: player 1 (the small blind, first to act preflop)
  # folds to the big blind at once, so player 0 wins the small blind, 5 chips, every hand.
  fold = EX.Baseline(fixed_action_policy(game, (0, 1)))
  pay = np.asarray(EX.duel(game, call, fold, jax.random.key(1), 16))
  np.testing.assert_array_equal(pay, np.full(16, 5.0))


@pytest.mark.parametrize("argv, match", [
    (["--minutes", "0"], "--minutes"),
    (["--batch", "0"], "--batch"),
    (["--capacity", "0"], "--capacity"),
    (["--snapshots", "0"], "--snapshots"),
    (["--eval-matches", "1"], "--eval-matches"),
    (["--lbr-games", "-1"], "--lbr-games"),
])
def test_bad_options_are_refused_before_work(tmp_path, argv, match, monkeypatch):
  monkeypatch.setattr(EX, "make", lambda *a: pytest.fail("the game was built"))
  with pytest.raises(ValueError, match=match):
    EX.main(argv + ["--out", str(tmp_path)])


def test_an_unwritable_out_is_refused_before_work(tmp_path, monkeypatch):
  monkeypatch.setattr(EX, "make", lambda *a: pytest.fail("the game was built"))
  blocker = tmp_path / "file"
  blocker.write_text("x")
  with pytest.raises(ValueError, match="--out"):
    EX.main(["--out", str(blocker)])
  with pytest.raises(ValueError, match="--out"):
    EX.main(["--out", str(blocker / "below")])
