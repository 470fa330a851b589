"""Student of Games' training on device games played through their rules: the query solver's
targets against closed-form values, bad input refused before compiling, and (slow) a tiny run on
Kuhn poker whose checkpoint the sog agent plays with."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent
from jaxgt.agents.specs import make_agent
from jaxgt.evaluation import referee
from jaxgt.games import make_from_string
from jaxgt.nets import cvpn
from jaxgt.nets.encoding import PBS
from jaxgt.search import rules_source
from jaxgt.training import device_run, loop
from jaxgt.training.config import PRESETS, TrainConfig
from jaxgt.training.loop import DeviceTrainer
from jaxgt.training.device_selfplay import DeviceQuerySolver, DeviceSelfPlay


def _kuhn_pass_bet_values(r0, r1):
  """Closed form: network-scale values ``[2, 3]`` of Kuhn poker's PBS after pass, bet (player 0
  to call or fold) with ranges ``r0``, ``r1`` when player 0 best-responds, and that response.
  ``v_p(k) = sum_k' q(k, k') r_o(k') u_p`` with ``q = 1/6`` for the six deals of distinct cards;
  fold loses the ante (1), call wins or loses 2 by the higher card."""
  q = 1.0 / 6.0
  call = np.array([sum(q * r1[j] * 2 * np.sign(k - j) for j in range(3) if j != k)
                   for k in range(3)])
  fold = np.array([-sum(q * r1[j] for j in range(3) if j != k) for k in range(3)])
  best = (call > fold).astype(int)  # 1: call
  v0 = np.maximum(call, fold)
  v1 = np.array([sum(q * r0[k] * (-2 * np.sign(k - j) if best[k] else 1.0)
                     for k in range(3) if k != j) for j in range(3)])
  return np.stack([v0, v1]), best


@pytest.fixture(scope="module")
def kuhn_actors():
  game = make_from_string("kuhn_poker")
  cfg = TrainConfig(hidden=(8,), num_actors=2, simulations=2, log_queries=2, q_search=2.0,
                    solver_batch=1, solver_simulations=2, solver_expansions_per_update=0.002,
                    query_capacity=4, replay_capacity=8, batch_size=4)
  model = device_run.network_for(game, cfg)
  return game, model, DeviceSelfPlay(game, model, cfg)


def test_query_targets_equal_the_closed_form_solution_of_a_small_pbs(kuhn_actors):
  """A query after pass, bet in Kuhn poker: its subgame ends below (no network leaf), so the
  solve's targets are the values of the PBS under player 0's best response, and its policy
  target is that response (1000 CFR iterations: within 2e-3 of the closed form)."""
  game, model, actors = kuhn_actors
  solver = DeviceQuerySolver(actors)
  state = rules_source.post_deal_root(game)
  for a in (0, 1):
    state = game.step(state, jnp.int32(a))
  assert int(game.current_player(state)) == 0
  r0, r1 = np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.1, 0.4])
  pbs = PBS(public=jax.tree_util.tree_map(lambda x: x[None], state),
            ranges=jnp.asarray(np.stack([r0, r1])[None], jnp.float32))
  params = cvpn.init(model, jax.random.PRNGKey(0))
  ex, res = solver.solve(params, pbs, jax.random.PRNGKey(3))
  want, best = _kuhn_pass_bet_values(r0, r1)
  np.testing.assert_allclose(np.asarray(ex.values[0]), want, atol=2e-3)
  assert np.all(np.asarray(ex.value_mask[0]))
  policy = np.asarray(ex.policy[0])  # [2, K, A]
  np.testing.assert_allclose(policy[0, np.arange(3), best], 1.0, atol=0.05)
  assert np.all(policy[1] == 0) and bool(ex.policy_mask[0])  # player 1 does not act there
  # nothing below is valued by the network: no query logged
  assert int(res.state.queries.count[0]) == 0 and np.all(np.asarray(res.state.queries.node) < 0)


@pytest.mark.slow
def test_actors_write_their_searches_roots_and_log_queries_of_states_after_the_deals(kuhn_actors):
  """Each actor decision writes its search's root example: a game's first search is rooted at
  the post-deal root with uniform ranges, a later one re-solves from a state on the way to the
  decision, labelled with the ranges its values were computed under (the re-solving player's
  range and the opponent's average gadget range, each a distribution over the private states
  dealt there), its value targets the root values. The queries are PBSs of states after the
  deals with normalised ranges (played through the rules)."""
  game, model, actors = kuhn_actors
  from jaxgt.training import buffers
  params = cvpn.init(model, jax.random.PRNGKey(0))
  replay = buffers.replay_buffer(model.encoding, 8)
  queries = buffers.query_buffer(model.encoding, 4)
  state = actors.init(jax.random.PRNGKey(1))
  state, replay, queries, m = actors.step(params, state, replay, queries, jax.random.PRNGKey(2))
  assert int(m["searches"]) == 2 == int(m["examples_added"])
  assert int(buffers.replay_size(replay)) == 2
  root = rules_source.post_deal_root(game)
  for i in range(2):  # the games' first searches: the post-deal root, uniform ranges
    s = jax.tree_util.tree_map(lambda x: x[i], replay.data.pbs.public)
    assert jax.tree_util.tree_all(jax.tree_util.tree_map(
        lambda a, b: bool(jnp.all(a == b)), game.public_features(s), game.public_features(root)))
    np.testing.assert_allclose(np.asarray(replay.data.pbs.ranges[i]), 1 / 3, rtol=1e-6)
    assert np.all(np.isfinite(np.asarray(replay.data.values[i])))
    assert bool(replay.data.policy_mask[i]) and np.all(np.asarray(replay.data.value_mask[i]))
  live = np.asarray(state.moves) > 0  # games still going: their next search re-solves
  state, replay, queries, m = actors.step(params, state, replay, queries, jax.random.PRNGKey(4))
  assert int(buffers.replay_size(replay)) == 4
  for i in np.flatnonzero(live) + 2:
    s = jax.tree_util.tree_map(lambda x: x[i], replay.data.pbs.public)
    assert all(int(game.private_index(s, p)) >= 0 for p in (0, 1))
    r = np.asarray(replay.data.pbs.ranges[i])
    np.testing.assert_allclose(r.sum(-1), 1.0, rtol=1e-5)
    assert not np.allclose(r, 1 / 3)  # the beliefs after the first move, not the root's
  filled = np.asarray(queries.filled)
  assert filled.sum() > 0
  for i in np.nonzero(filled)[0]:
    s = jax.tree_util.tree_map(lambda x: x[i], queries.pbs.public)
    assert int(game.current_player(s)) in (0, 1)
    assert all(int(game.private_index(s, p)) >= 0 for p in (0, 1))
    np.testing.assert_allclose(np.asarray(queries.pbs.ranges[i]).sum(-1), 1.0, rtol=1e-5)


def test_bad_input_is_refused_before_compiling():
  kuhn = make_from_string("kuhn_poker")
  with pytest.raises(ValueError, match="factorisation"):
    DeviceTrainer(make_from_string("goofspiel(num_cards=3)"), PRESETS["tiny"])
  with pytest.raises(ValueError, match="use at least"):
    DeviceTrainer(kuhn, TrainConfig(capacity=3))
  with pytest.raises(ValueError, match="embed_dim"):
    DeviceTrainer(kuhn, TrainConfig(embed_dim=4))
  with pytest.raises(ValueError, match="p_td1 must be 0"):
    DeviceTrainer(kuhn, TrainConfig(p_td1=0.5))
  with pytest.raises(ValueError, match="FactoredEncoding"):
    DeviceSelfPlay(kuhn, device_run.network_for(make_from_string("leduc_poker"), TrainConfig()),
                   TrainConfig())
  with pytest.raises(ValueError, match="too large to enumerate"):
    DeviceTrainer(make_from_string("liars_dice(numdice=2)"),
                  PRESETS["liars_dice"]).exploitability(None)


@pytest.mark.slow
def test_a_tiny_run_through_the_rules_writes_a_network_sog_plays_with(tmp_path):
  """Three learner steps on Kuhn poker played through its rules: the run directory names the
  game string, its metrics say the evaluation is skipped, and its newest checkpoint is the
  network device_run.load_network reads and sog(checkpoint=...) plays with (re-solving with
  the run's gadget alpha)."""
  game = make_from_string("kuhn_poker")
  out = tmp_path / "run"
  cfg = dataclasses.replace(PRESETS["tiny"], alpha=0.25)
  state = loop.train(game, cfg, out, steps=3, seed=0)
  assert int(state.learner_steps) == 3
  lines = loop.read_metrics(out)
  assert [m["step"] for m in lines] == [1, 2, 3]
  assert all(m["evaluation"] == "skipped" and np.isfinite(m["loss"]) for m in lines)
  assert all("exploitability" not in m for m in lines)
  assert lines[-1]["queries_solved"] > 0 and lines[-1]["replay_size"] > 0
  model, params, config = device_run.load_network(out, game)
  assert config == cfg
  for a, b in zip(jax.tree_util.tree_leaves(params),
                  jax.tree_util.tree_leaves(state.learner.params)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  agent = make_agent(game, f"sog(checkpoint={out},simulations=2)")
  assert isinstance(agent, DeviceGTCFRAgent) and agent.resolve and agent.alpha == 0.25
  assert make_agent(game, f"sog(checkpoint={out},simulations=2,alpha=0.75)").alpha == 0.75
  with pytest.raises(ValueError, match="alpha"):
    make_agent(game, f"sog(checkpoint={out},alpha=1.5)")
  pos, _ = referee.through_chance(game, referee.root(game), jax.random.key(0), jnp.float32)
  probs, _ = jax.jit(agent.act)(jax.random.key(1), agent.init(jax.random.key(0)), pos)
  assert abs(float(jnp.sum(probs)) - 1.0) < 1e-5
  # a resumed run continues from the checkpoint
  state = loop.train(game, cfg, out, steps=4, seed=0, resume=True)
  assert int(state.learner_steps) == 4


def test_a_run_through_the_rules_of_an_enumerable_game_is_evaluated_exactly():
  """With eval_every > 0 a run of Kuhn poker played through its rules reports the exact
  exploitability of its SoG policy, continually re-solving as the enumerated game's runs
  evaluate: the constructed policy's, evaluated on the game enumerated from the same rules,
  for the parameters given (one compilation for all)."""
  from jaxgt.core.evaluate import evaluate
  from jaxgt.evaluation.construct import construct_rules_policy
  game = make_from_string("kuhn_poker")
  cfg = TrainConfig(hidden=(8,), num_actors=2, simulations=2, log_queries=2, solver_batch=1,
                    solver_simulations=2, query_capacity=4, replay_capacity=8, batch_size=4,
                    eval_every=1, eval_simulations=3)
  tr = DeviceTrainer(game, cfg)
  assert tr.evaluates and tr.enumerated.tree.num_histories == 58
  values = []
  for seed in (0, 1):
    params = cvpn.init(tr.model, jax.random.PRNGKey(seed))
    got = tr.exploitability(params, seed=0)
    agent = device_run.device_sog_agent(game, tr.model, params, simulations=3, resolve=True)
    want = float(evaluate(tr.enumerated, construct_rules_policy(
        agent, jax.random.PRNGKey(0), game=tr.enumerated)).exploitability)
    assert abs(got - want) < 1e-5 and 0 < got < 1
    values.append(got)
  assert values[0] != values[1]


@pytest.mark.slow
def test_train_sog_example_evaluates_a_run_through_the_rules_exactly(tmp_path, capsys):
  """examples/train_sog.py --rules trains Kuhn poker through its rules and evaluates each
  checkpoint with the root-anchored agent on the enumerated game: its figure for the last
  checkpoint is the trainer's own exact evaluation of those parameters."""
  import json
  from script_modules import load_script
  from jaxgt.training import checkpoint
  ex = load_script("examples/train_sog.py", "train_sog_example")
  out = tmp_path / "run"
  log = tmp_path / "log.jsonl"
  ex.main(["--game", "kuhn_poker", "--rules", "--preset", "tiny", "--steps", "2", "--out",
           str(out), "--simulations", "2", "--seeds", "1", "--log", str(log)])
  rows = [json.loads(line) for line in log.read_text().splitlines()]
  assert [r["step"] for r in rows] == [0, 2]
  game = make_from_string("kuhn_poker")
  cfg = dict(PRESETS["tiny"].to_json(), eval_simulations=2, eval_every=1)
  tr = DeviceTrainer(game, TrainConfig(**{**cfg, "hidden": tuple(cfg["hidden"])}))
  state = checkpoint.restore(out / loop.CHECKPOINTS, tr.init(0), loop.trainer_for(
      game, PRESETS["tiny"]).metadata(), 2)
  assert abs(rows[-1]["exploitability"][0] - tr.exploitability(state.learner.params, 0)) < 1e-6


def test_train_refuses_exact_solver_leaves_through_the_rules_before_any_output(tmp_path, capsys,
                                                                             no_work):
  """``jaxgt train --rules`` with ``solver_leaves: "exact"`` fails with one line and exit 2
  before announcing the run or compiling anything, and creates no run directory."""
  import json
  from jaxgt.cli import main
  cfg = tmp_path / "cfg.json"
  cfg.write_text(json.dumps({"solver_leaves": "exact"}))
  out = tmp_path / "run"
  assert main(["train", "kuhn_poker", "--rules", "--config", str(cfg), "--steps", "1", "--out",
               str(out)]) == 2
  captured = capsys.readouterr()
  assert "training into" not in captured.out
  assert "solver_leaves must be 'network'" in captured.err and not out.exists()
