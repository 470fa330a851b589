"""The blended leaf evaluator and examples/leaf_precision.py: blending mixes two evaluators'
values linearly and keeps the second's prior; weight 1 is the network's search and weight 0
the exact evaluator's, to the digit; bad options are refused before any work."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.core.compiler import compile_game
from jaxgt.evaluation import construct
from jaxgt.games import make_from_string
from jaxgt.search import device_tree
from jaxgt.search import evaluator as evaluator_lib
from jaxgt.training import loop
from jaxgt.training.agent import ParamsHolder, params_evaluator, sog_agent
from jaxgt.training.config import preset

from script_modules import load_script


@pytest.fixture(scope="module")
def ex():
  return load_script("examples/leaf_precision.py", "leaf_precision_example")


@pytest.fixture(scope="module")
def kuhn():
  return compile_game(make_from_string("kuhn_poker"))


def _leaves(shape=(3, 2)):
  return evaluator_lib.LeafInput(tree=None, leaf=jnp.ones(shape, bool),
                                 reach=jnp.ones((2,) + shape), chance=jnp.ones(shape),
                                 root_ranges=jnp.ones((2, 1)))


@pytest.mark.parametrize("weight, value", [(0.0, 1.0), (0.25, 1.5), (1.0, 3.0)])
def test_blend_mixes_the_two_evaluators_values_linearly(weight, value):
  one = evaluator_lib.from_callable(lambda leaves: jnp.ones(leaves.leaf.shape), name="one")
  three = evaluator_lib.from_callable(lambda leaves: 3.0 * jnp.ones(leaves.leaf.shape))
  ev = evaluator_lib.blend(one, three, weight)
  (values, prior), _ = ev.apply(ev.init(), _leaves())
  np.testing.assert_allclose(np.asarray(values), value)
  assert prior is None


@pytest.mark.parametrize("weight", [-0.1, 1.5, float("nan")])
def test_blend_refuses_a_weight_outside_zero_to_one(weight):
  zero = evaluator_lib.zero()
  with pytest.raises(ValueError, match="blend weight must be in"):
    evaluator_lib.blend(zero, zero, weight)


@pytest.fixture(scope="module")
def tiny_run(kuhn, tmp_path_factory):
  out = tmp_path_factory.mktemp("leaf_precision") / "run"
  loop.train(kuhn, preset("tiny"), out, steps=4)
  return out


def _exploitability(kuhn, out, evaluator_of, simulations=4):
  _, cfg = loop.read_config(out)
  trainer = loop.trainer_for(kuhn, cfg)
  params = loop.restore(trainer, out, 0).learner.params
  src = device_tree.source_from_game(kuhn, "float32")
  ev = evaluator_of(src, params_evaluator(src, trainer.model, ParamsHolder(params)))
  res = construct.evaluate(lambda: sog_agent(kuhn, trainer.model, params, simulations=simulations,
                                             evaluator=ev, value_average=cfg.value_average,
                                             alpha=cfg.alpha), seeds=(0, 1))
  return res.exploitability


@pytest.mark.slow
def test_weight_one_is_the_networks_search_and_zero_the_exact_values(ex, kuhn, tiny_run):
  res = ex.measure(kuhn, tiny_run, 4, [0.0, 1.0], 2)
  rows = {r["weight"]: np.asarray(r["exploitability"]) for r in res["rows"]}
  assert res["learner_steps"] == 4 and set(rows) == {0.0, 1.0, ex.EXACT}
  # weight 1: the trained agent's own search (sog(checkpoint=...)), computed without blending
  np.testing.assert_allclose(rows[1.0], _exploitability(kuhn, tiny_run, lambda src, net: net),
                             rtol=1e-6)
  # the exact row: the exact evaluator alone, values and prior
  np.testing.assert_allclose(rows[ex.EXACT], _exploitability(
      kuhn, tiny_run, lambda src, net: evaluator_lib.exact(src)), rtol=1e-6)
  assert np.all(np.isfinite(rows[0.0])) and np.all(rows[0.0] >= 0)


@pytest.mark.slow
def test_the_command_prints_json_logs_and_plots(ex, tiny_run, tmp_path, capsys):
  log, png = tmp_path / "rows.jsonl", tmp_path / "w.png"
  assert ex.main(["--out", str(tiny_run), "--simulations", "4", "--weights", "0.5",
                  "--no-reference", "--seeds", "1", "--json", "--log", str(log)]) == 0
  res = json.loads(capsys.readouterr().out)
  assert [r["weight"] for r in res["rows"]] == [0.5]
  line = json.loads(log.read_text().splitlines()[0])
  assert line["game"] == "kuhn_poker" and line["step"] == 4 and len(line["exploitability"]) == 1
  assert ex.main(["--plot-log", str(log), "--plot", str(png)]) == 0
  assert png.stat().st_size > 0


@pytest.mark.parametrize("argv, message", [
    (["--weights", "0,1.5"], "--weights must be in [0, 1]"),
    (["--weights", "a"], "--weights must be comma-separated numbers"),
    (["--simulations", "0"], "--simulations must be a positive integer"),
    (["--step", "7"], "has no checkpoint at learner step 7"),
    (["--log", "/no/such/dir/x.jsonl"], "--log /no/such/dir/x.jsonl: the directory /no/such/dir does not exist"),
])
def test_bad_options_are_refused_before_any_work(ex, kuhn, tmp_path, capsys, argv, message):
  out = tmp_path / "run"
  out.mkdir()
  loop.write_config(out, kuhn, preset("tiny"))  # a run directory before its first checkpoint
  assert ex.main(["--out", str(out)] + argv) == 2
  assert message in capsys.readouterr().err


def test_a_directory_without_a_run_and_a_foreign_log_are_refused(ex, tmp_path, capsys):
  assert ex.main(["--out", str(tmp_path)]) == 2
  assert "is not a jaxgt train run directory" in capsys.readouterr().err
  bad = tmp_path / "bad.jsonl"
  bad.write_text('{"x": 1}\n')
  assert ex.main(["--plot-log", str(bad), "--plot", str(tmp_path / "p.png")]) == 2
  assert "is not a log of this example" in capsys.readouterr().err
  row = {"game": "kuhn_poker", "weight": 1.0, "step": 4, "first_seed": 0, "scale": 1.0,
         "unit": "game units", "exploitability": [0.1]}
  mixed = tmp_path / "mixed.jsonl"
  mixed.write_text("\n".join(json.dumps(dict(row, simulations=s)) for s in (10, 100)) + "\n")
  assert ex.main(["--plot-log", str(mixed), "--plot", str(tmp_path / "p.png")]) == 2
  assert "the logs mix SoG(10, 1) on kuhn_poker and SoG(100, 1)" in capsys.readouterr().err
