"""``jaxgt.solve(..., target=eps)`` and ``jaxgt solve --target``: stop at the first evaluation
at or below eps, evaluations on a geometric grid."""

import pytest

import jaxgt
from jaxgt.cli import main
from jaxgt.solving import TARGET_GROWTH, solve


def test_target_stops_at_the_first_evaluation_below_it():
  game = jaxgt.load("kuhn_poker")
  res = solve(game, "cfr+", iterations=5000, eval_every=10, dtype="float64", target=1e-3)
  its = [e.iteration for e in res.evaluations]
  want = [10]
  while want[-1] < res.iterations:
    want.append(max(want[-1] + 1, int(want[-1] * TARGET_GROWTH)))
  assert its == want and res.iterations < 5000
  assert res.evaluations[-1].exploitability <= 1e-3
  assert all(e.exploitability > 1e-3 for e in res.evaluations[:-1])
  # the same iterations in one run, evaluated independently (jaxgt.evaluate, float64)
  again = solve(game, "cfr+", iterations=res.iterations, eval_every=0, dtype="float64")
  assert jaxgt.evaluate(game, again.policy).exploitability == pytest.approx(
      res.exploitability, rel=1e-9)


def test_target_not_reached_runs_every_iteration():
  res = solve("kuhn_poker", "cfr+", iterations=50, eval_every=10, dtype="float64", target=1e-9)
  assert res.iterations == 50 and res.evaluations[-1].iteration == 50


def test_bad_targets_are_refused():
  for target in (0.0, -1.0, float("nan"), "1e-3"):
    with pytest.raises(ValueError, match="target"):
      solve("kuhn_poker", target=target)
  with pytest.raises(ValueError, match="eval_every"):
    solve("kuhn_poker", target=1e-3, eval_every=0)


def test_cli_target(capsys):
  assert main(["solve", "kuhn_poker", "--solver", "cfr+", "--iterations", "5000",
               "--eval-every", "10", "--target", "1e-3", "--dtype", "float64"]) == 0
  final = [l for l in capsys.readouterr().out.splitlines() if l.startswith("final:")][0]
  assert int(final.split()[2]) < 5000
