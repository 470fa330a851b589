"""examples/value_error.py: its reference values are Kuhn poker's equilibrium value at the root,
it measures a tiny run's network end to end, and bad options are refused before any work."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.core.compiler import compile_game
from jaxgt.games import make_from_string
from jaxgt.nets import gtcfr_evaluator
from jaxgt.nets.encoding import PBS
from jaxgt.training import loop
from jaxgt.training.config import preset

from script_modules import load_script


@pytest.fixture(scope="module")
def ex():
  return load_script("examples/value_error.py", "value_error_example")


@pytest.fixture(scope="module")
def kuhn():
  return compile_game(make_from_string("kuhn_poker"))


@pytest.mark.parametrize("value_space", ["expected", "counterfactual"])
def test_reference_values_average_to_kuhns_game_value_at_the_root(ex, kuhn, value_space):
  trainer = loop.trainer_for(kuhn, dataclasses.replace(preset("tiny"), value_space=value_space))
  sp, enc = trainer.actors, trainer.model.encoding
  smap = gtcfr_evaluator.slot_map(sp.source, enc)
  public = jnp.zeros((1,), jnp.int32)
  ranges = gtcfr_evaluator.to_encoding_order(smap, public, sp.agent.ranges[None])
  solved = ex.reference_solver(trainer, 100)(PBS(public=public, ranges=ranges),
                                            jax.random.PRNGKey(0))
  params = trainer.init(0).learner.params
  _, truth, mask = ex.expected_values(trainer.model, params, solved)
  r = np.asarray(solved.pbs.ranges[0])
  v0 = float(np.sum(np.where(np.asarray(mask[0, 0]), r[0] * np.asarray(truth[0, 0]), 0.0)))
  v1 = float(np.sum(np.where(np.asarray(mask[0, 1]), r[1] * np.asarray(truth[0, 1]), 0.0)))
  assert v0 == pytest.approx(-1 / 18, abs=2e-3)
  assert v1 == pytest.approx(1 / 18, abs=2e-3)


@pytest.mark.slow
def test_a_tiny_runs_errors_are_measured_on_every_set(ex, kuhn, tmp_path, capsys):
  out = tmp_path / "run"
  loop.train(kuhn, preset("tiny"), out, steps=4)
  assert ex.main(["--game", "kuhn_poker", "--out", str(out), "--queries", "8",
                  "--exact-simulations", "10", "--searches", "4", "--json"]) == 0
  res = json.loads(capsys.readouterr().out)
  assert res["learner_steps"] == 4
  assert set(res) == {"learner_steps", "replay", "sog4"}
  for row in (res["replay"], res["sog4"]):
    assert 0 < row["pbs"] <= 8
    assert np.isfinite(row["net"]) and row["zero"] > 0
    assert row["repeat"] < 0.1 * row["zero"]
  assert {"targets", "fit"} <= set(res["replay"])


@pytest.mark.slow
def test_fresh_networks_fitted_offline_are_measured_on_every_set(ex, kuhn, tmp_path, capsys):
  out, saved = tmp_path / "run", tmp_path / "refit"
  loop.train(kuhn, preset("tiny"), out, steps=4)
  assert ex.main(["--game", "kuhn_poker", "--out", str(out), "--queries", "8",
                  "--exact-simulations", "10", "--searches", "4", "--fit", "8x8:8:4:0.01",
                  "--save", str(saved), "--json"]) == 0
  fits = json.loads(capsys.readouterr().out)["fits"]
  assert [(f["hidden"], f["steps"], f.get("run", False)) for f in fits] == [
      ("16", 4, True), ("8x8", 2, False), ("8x8", 4, False), ("8x8", 8, False)]
  for f in fits:
    assert {"held", "replay", "sog4"} <= set(f)
    assert all(np.isfinite(f[k]) for k in ("held", "replay", "sog4"))
  # the saved run directory holds the fitted network: on the same replay sample it measures as
  # the last fit did (the sog sets differ: their queries come from searches with the network)
  name, cfg = loop.read_config(saved)
  assert (name, cfg.hidden, cfg.batch_size, cfg.alpha_init) == ("kuhn_poker", (8, 8), 4, 0.01)
  state = loop.restore(loop.trainer_for(kuhn, cfg), saved, 0)
  run = loop.restore(loop.trainer_for(kuhn, preset("tiny")), out, 0)
  assert int(state.learner_steps) == 8 and int(state.learner.step) == 8
  assert np.array_equal(np.asarray(state.replay.filled), np.asarray(run.replay.filled))
  assert ex.main(["--game", "kuhn_poker", "--out", str(saved), "--queries", "8",
                  "--exact-simulations", "10", "--searches", "4", "--json"]) == 0
  again = json.loads(capsys.readouterr().out)
  assert again["learner_steps"] == 8
  assert again["replay"]["net"] == pytest.approx(fits[-1]["replay"], rel=1e-5)


@pytest.mark.parametrize("argv, message", [
    (["--queries", "0"], "--queries must be a positive integer"),
    (["--searches", "10,-1"], "--searches must be a positive integer"),
    (["--searches", "10,x"], "--searches must be comma-separated positive integers"),
    (["--game", "leduc_poker"], "holds a run of kuhn_poker"),
    (["--fit", "128x128"], "is not WIDTHS:STEPS[:BATCH[:LR]]"),
    (["--fit", "128xa:100"], "is not WIDTHS:STEPS[:BATCH[:LR]]"),
    (["--fit", "0x8:100"], "width must be a positive integer"),
    (["--fit", "8:100:0"], "batch must be a positive integer"),
    (["--fit", "8:100:4:nan"], "the learning rate must be a positive number"),
    (["--save", "{tmp}/refit"], "--save needs exactly one --fit spec (got 0)"),
    (["--fit", "8:10,16:10", "--save", "{tmp}/refit"], "needs exactly one --fit spec (got 2)"),
    (["--fit", "8:10", "--save", "{tmp}/run"], "the folder is not empty"),
    (["--fit", "8:10", "--save", "{tmp}/run/config.json"], "exists and is not a folder"),
])
def test_bad_options_are_refused_before_any_work(ex, kuhn, tmp_path, capsys, argv, message):
  out = tmp_path / "run"
  out.mkdir()
  loop.write_config(out, kuhn, preset("tiny"))  # a run directory before its first checkpoint
  argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
  assert ex.main(["--game", "kuhn_poker", "--out", str(out)] + argv) == 2
  assert message in capsys.readouterr().err


def test_a_directory_without_a_run_is_refused(ex, tmp_path, capsys):
  assert ex.main(["--out", str(tmp_path)]) == 2
  assert "is not a jaxgt train run directory" in capsys.readouterr().err
