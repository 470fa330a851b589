"""Student of Games' training process (issue 12 part B): config, self-play actors, query
solver, loop, exact resume. The end-to-end runs compile GT-CFR searches with a network
(minutes on a loaded 2-core machine) and are marked slow."""

import json

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt.training import buffers
from jaxgt.training import config as config_lib
from jaxgt.training import learner, loop


def test_presets_and_json_configs(tmp_path):
  sy = config_lib.preset("scotland_yard")
  # Table S2's Scotland Yard column.
  assert (sy.batch_size, sy.optimizer, sy.alpha_init, sy.decay, sy.decay_steps) == \
      (1024, "sgd", 0.1, 0.5, 2_000_000)
  assert (sy.policy_weight, sy.max_updates, sy.replay_capacity) == (0.05, 5.0, 1_000_000)
  assert (sy.q_search, sy.q_recursive, sy.p_td1, sy.epsilon) == (0.3, 0.1, 0.0, 0.0)
  assert sy.learner() == learner.SCOTLAND_YARD_TABLE_S2
  for name in config_lib.PRESETS:
    assert config_lib.preset(name).learner().batch_size == config_lib.preset(name).batch_size
  with pytest.raises(ValueError, match="unknown preset"):
    config_lib.preset("chess")
  path = tmp_path / "c.json"
  path.write_text(json.dumps({"num_actors": 3, "hidden": [8, 8]}))
  cfg = config_lib.load(path)
  assert cfg.num_actors == 3 and cfg.hidden == (8, 8)
  path.write_text(json.dumps({"num_actor": 3}))
  with pytest.raises(ValueError, match="unknown training config keys"):
    config_lib.load(path)
  path.write_text("{")
  with pytest.raises(ValueError, match="cannot read"):
    config_lib.load(path)
  for bad in ({"epsilon": 1.5}, {"num_actors": 0}, {"solver_batch": 99, "query_capacity": 8},
              {"optimizer": "rmsprop"}, {"hidden": []}, {"p_td1": 0.2}):
    with pytest.raises(ValueError):
      config_lib.from_dict(bad)
  assert config_lib.from_dict(cfg.to_json()) == cfg


TINY = config_lib.preset("tiny")


def _params(state):
  return [np.asarray(x) for x in jax.tree_util.tree_leaves(state.learner.params)]


@pytest.mark.slow
def test_resume_continues_exactly_and_programs_compile_once(tmp_path):
  g = jaxgt.load("kuhn_poker")
  whole = loop.train(g, TINY, tmp_path / "a", steps=4, seed=3)
  part = loop.train(g, TINY, tmp_path / "b", steps=2, seed=3)
  assert int(part.learner_steps) == 2
  resumed = loop.train(g, TINY, tmp_path / "b", steps=4, seed=3, resume=True)
  for a, b in zip(_params(whole), _params(resumed)):
    np.testing.assert_array_equal(a, b)
  np.testing.assert_array_equal(np.asarray(whole.replay.data.values),
                                np.asarray(resumed.replay.data.values))
  assert int(resumed.searches) == int(whole.searches) == 4 * TINY.num_actors
  # Training changed the parameters (the run is not a no-op) ...
  fresh = loop.trainer_for(g, TINY).init(3)
  assert any(not np.array_equal(a, b) for a, b in zip(_params(fresh), _params(whole)))
  # ... and every part compiled once for the three runs (parameters are data).
  actors, solver, _ = loop.trainer_for(g, TINY).programs()
  assert actors._cache_size() == 1 and solver._cache_size() == 1
  # The metrics log: one line per iteration with losses and buffer sizes.
  rows = loop.read_metrics(tmp_path / "b")
  assert [r["step"] for r in rows] == [1, 2, 3, 4]
  assert all(np.isfinite(r["loss"]) and r["replay_size"] > 0 for r in rows)
  # The buffers got what the actors and the solver produced.
  assert int(whole.replay.added) == 4 * TINY.num_actors + int(whole.solved)
  # A checkpoint of another game is refused.
  other = jaxgt.load("leduc_poker")
  with pytest.raises(ValueError, match="holds a run of kuhn_poker"):
    loop.load_run(tmp_path / "a", other)


@pytest.mark.slow
def test_selfplay_examples_are_search_targets_of_legal_games():
  """Actors' games follow the rules (histories are decisions of the game, moves count up and
  restart) and their main-line examples are distributions on legal actions."""
  g = jaxgt.load("kuhn_poker")
  tr = loop.trainer_for(g, TINY)
  state = tr.init(0)
  enc = tr.model.encoding
  rb = buffers.replay_buffer(enc, 64)
  qb = buffers.query_buffer(enc, 64)
  actors = state.actors
  player = np.asarray(g.tree.player)
  for i in range(4):
    actors, rb, qb, m = tr.actors.step(state.learner.params, actors, rb, qb,
                                       jax.random.PRNGKey(i))
    assert np.all(np.isin(player[np.asarray(actors.history)], (0, 1)))
  n = int(rb.added)
  assert n == 4 * TINY.num_actors
  pol = np.asarray(rb.data.policy[:n])
  legal = np.asarray(enc.legal)[np.asarray(rb.data.pbs.public[:n])]
  assert np.all(pol[~legal] == 0)
  rows = pol.sum(-1)
  has = np.asarray(rb.data.policy_mask[:n])
  assert np.any(has)
  acting = legal.any(-1)[has]
  np.testing.assert_allclose(rows[has][acting], 1.0, atol=1e-5)
  assert int(actors.games) >= 1  # Kuhn games end within 3 decisions
  assert int(qb.added) > 0  # q_search = 1 in the tiny preset
