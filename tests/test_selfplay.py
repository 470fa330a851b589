"""Student of Games' training process: config, self-play actors, query
solver, loop, exact resume. The end-to-end runs compile GT-CFR searches with a network
(minutes on a loaded 2-core machine) and are marked slow."""

import dataclasses
import json
import math
import pathlib

import jax
import jax.numpy as jnp
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
  cfg = config_lib.load_config(path)
  assert cfg.num_actors == 3 and cfg.hidden == (8, 8)
  path.write_text(json.dumps({"num_actor": 3}))
  with pytest.raises(ValueError, match="unknown training config keys"):
    config_lib.load_config(path)
  path.write_text("{")
  with pytest.raises(ValueError, match="cannot read"):
    config_lib.load_config(path)
  for bad in ({"epsilon": 1.5}, {"num_actors": 0}, {"solver_batch": 99, "query_capacity": 8},
              {"optimizer": "rmsprop"}, {"hidden": []}):
    with pytest.raises(ValueError):
      config_lib.from_dict(bad)
  assert config_lib.from_dict(cfg.to_json()) == cfg


def test_value_average_of_a_run_is_its_configs():
  """Training averages node values as the search does by default ("node"), refuses other
  normalisers, and hands its choice to every search of the run."""
  from jaxgt.search import gtcfr as gtcfr_search
  assert config_lib.TrainConfig().value_average == "node"
  assert gtcfr_search.GTCFRConfig(capacity=1).value_average == "node"
  assert all(p.value_average == "node" for p in config_lib.PRESETS.values())
  with pytest.raises(ValueError, match="value_average must be one of"):
    config_lib.from_dict({"value_average": "mean"})
  cfg = dataclasses.replace(TINY, value_average="search")
  tr = loop.trainer_for(jaxgt.load("kuhn_poker"), cfg)
  assert tr.actors.search_config.value_average == "search"
  assert tr.actors.agent.config.value_average == "search"
  assert tr.solver.search_config.value_average == "search"
  assert loop.trainer_for(jaxgt.load("kuhn_poker"), TINY).actors.agent.config.value_average \
      == "node"


def test_value_space_of_a_run_is_its_configs():
  """New runs fit expected values, a saved config without the entry reads as the
  counterfactual values its run fitted, other spaces are refused, and the run's network
  fits the config's space."""
  assert config_lib.TrainConfig().value_space == "expected"
  saved = {k: v for k, v in TINY.to_json().items() if k != "value_space"}
  assert config_lib.from_saved(saved).value_space == "counterfactual"
  with pytest.raises(ValueError, match="value_space must be one of"):
    config_lib.from_dict({"value_space": "cfv"})
  for space in ("counterfactual", "expected"):
    tr = loop.trainer_for(jaxgt.load("kuhn_poker"), dataclasses.replace(TINY, value_space=space))
    assert tr.model.value_space == space


def test_query_solves_take_their_own_expansions_per_update():
  """solver_expansions_per_update sets the query solves' c (more CFR iterations per
  simulation below 1); 0 keeps the actors' c; negative values are refused."""
  g = jaxgt.load("kuhn_poker")
  tr = loop.trainer_for(g, dataclasses.replace(TINY, solver_expansions_per_update=0.25))
  assert tr.solver.search_config.expansions_per_update == 0.25
  assert tr.solver.search_config.updates_per_phase == 4
  assert tr.actors.search_config.updates_per_phase == 1
  assert loop.trainer_for(g, TINY).solver.search_config.expansions_per_update == \
      TINY.expansions_per_update
  with pytest.raises(ValueError, match="solver_expansions_per_update"):
    config_lib.from_dict({"solver_expansions_per_update": -1.0})


@pytest.mark.parametrize("stored", [None, "search", "node"])
def test_a_saved_run_loads_with_the_normaliser_it_was_trained_with(tmp_path, stored):
  """A run saved before "node" was the default has no value_average entry (it trained with
  "search"): its config.json and checkpoint load as "search", so does its agent; an entry
  present is kept; the agent spec's value_average overrides it."""
  from jaxgt.training import agent_kind, checkpoint
  g = jaxgt.load("kuhn_poker")
  saved = {k: v for k, v in TINY.to_json().items() if k != "value_average"}
  if stored is not None:
    saved["value_average"] = stored
  want = stored or "search"
  assert config_lib.from_saved(saved).value_average == want
  assert config_lib.from_dict(saved).value_average == (stored or "node")
  out = tmp_path / "run"
  out.mkdir()
  (out / loop.CONFIG_FILE).write_text(json.dumps({"game": g.name, "config": saved}))
  tr = loop.trainer_for(g, config_lib.from_saved(saved))
  checkpoint.save(out / loop.CHECKPOINTS, 1, tr.init(0), dict(tr.metadata(), config=saved))
  run = loop.load_run(out, g)
  assert run.config.value_average == want
  assert agent_kind.sog(g, checkpoint=str(out), simulations=2).config.value_average == want
  assert agent_kind.sog(g, checkpoint=str(out), simulations=2,
                        value_average="node").config.value_average == "node"


def test_queries_are_picked_as_expected_counts():
  """pick_queries keeps on average min(expected, m) of a row's m valid entries, only valid
  ones, each equally often."""
  from jaxgt.training.selfplay import pick_queries
  valid = np.zeros((4, 8), bool)
  for i, m in enumerate((8, 5, 1, 0)):
    valid[i, :m] = True
  B = 4000
  for expected in (0.3, 2.0):
    keep = np.asarray(jax.vmap(lambda k: pick_queries(valid, expected, k))(
        jax.random.split(jax.random.PRNGKey(1), B)))
    assert not np.any(keep & ~valid)
    for i, m in enumerate((8, 5, 1, 0)):
      if m == 0:
        continue
      p = min(1.0, expected / m)
      freq = keep[:, i, :m].mean(0)  # each valid entry picked with probability p
      assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / B) + 1e-12), (m, freq, p)
      mean = keep[:, i].sum(1).mean()
      assert abs(mean - min(expected, m)) <= 5 * np.sqrt(m * p * (1 - p) / B) + 1e-12
  for bad in ({"q_search": -0.1}, {"q_recursive": 9.0, "log_queries": 8}):
    with pytest.raises(ValueError, match="q_"):
      config_lib.from_dict(bad)
  assert config_lib.from_dict({"q_search": 2.0, "log_queries": 8}).q_search == 2.0


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, math.inf, "0.5", True])
def test_p_td1_outside_the_unit_interval_is_refused(bad):
  with pytest.raises(ValueError, match="p_td1 must be"):
    config_lib.from_dict({"p_td1": bad})


def test_p_td1_in_the_unit_interval_is_accepted():
  for ok in (0, 0.2, 1):
    assert config_lib.from_dict({"p_td1": ok}).p_td1 == ok


TINY = config_lib.preset("tiny")


def _params(state):
  return [np.asarray(x) for x in jax.tree_util.tree_leaves(state.learner.params)]


def _leaves(tree):
  return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


@pytest.mark.slow
@pytest.mark.parametrize("p_td1, seed", [(0.0, 3), (0.5, 0)])
def test_resume_continues_exactly_and_programs_compile_once(tmp_path, p_td1, seed):
  """A run resumed from its step-2 checkpoint equals the uninterrupted one, TD(1) pending
  records included (with p_td1 = 0.5 and seed 0 the checkpoint holds a row of an unfinished
  game)."""
  g = jaxgt.load("kuhn_poker")
  cfg = dataclasses.replace(TINY, p_td1=p_td1)
  whole = loop.train(g, cfg, tmp_path / "a", steps=4, seed=seed)
  part = loop.train(g, cfg, tmp_path / "b", steps=2, seed=seed)
  assert int(part.learner_steps) == 2
  if p_td1 > 0:  # the checkpoint carries a non-empty pending record
    assert np.any(np.asarray(part.actors.pending_valid))
  resumed = loop.train(g, cfg, tmp_path / "b", steps=4, seed=seed, resume=True)
  for a, b in zip(_params(whole), _params(resumed)):
    np.testing.assert_array_equal(a, b)
  for a, b in zip(_leaves((whole.replay, whole.actors)), _leaves((resumed.replay,
                                                                  resumed.actors))):
    np.testing.assert_array_equal(a, b)
  assert int(resumed.searches) == int(whole.searches) == 4 * cfg.num_actors
  # Training changed the parameters (the run is not a no-op) ...
  fresh = loop.trainer_for(g, cfg).init(seed)
  assert any(not np.array_equal(a, b) for a, b in zip(_params(fresh), _params(whole)))
  # ... and every part compiled once for the three runs (parameters are data).
  actors, solver, _ = loop.trainer_for(g, cfg).programs()
  assert actors._cache_size() == 1 and solver._cache_size() == 1
  # The metrics log: one line per iteration with losses and buffer sizes.
  rows = loop.read_metrics(tmp_path / "b")
  assert [r["step"] for r in rows] == [1, 2, 3, 4]
  assert all(np.isfinite(r["loss"]) and r["replay_size"] > 0 for r in rows)
  # ... and the examples the learner may still draw, those under the use bound.
  assert all(0 <= r["replay_drawable"] <= r["replay_size"] for r in rows)
  assert rows[-1]["replay_drawable"] == int(np.sum(buffers.eligible(resumed.replay,
                                                                    cfg.max_updates)))
  # The buffers got what the actors and the solver produced: every decision's example, at
  # once or (TD(1)) when its game ended.
  pending = int(np.sum(np.asarray(whole.actors.pending_valid)))
  assert int(whole.replay.added) + pending == 4 * cfg.num_actors + int(whole.solved)
  # The log's TD(1) counts: every decision held back was written when its game ended, or
  # is still pending.
  assert sum(r["td1_sampled"] for r in rows) == sum(r["td1_added"] for r in rows) + pending
  assert (sum(r["td1_sampled"] for r in rows) > 0) == (p_td1 > 0)
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


REFERENCE = pathlib.Path(__file__).parent / "data" / "selfplay_kuhn_tiny_p_td1_0.npz"


def _trajectory(trainer, iterations=4, seed=5):
  """The arrays :data:`REFERENCE` stores after ``iterations`` loop iterations from ``seed``."""
  state = trainer.init(seed)
  for _ in range(iterations):
    state, _ = trainer.iterate(state)
  d = state.replay.data
  out = {"public": d.pbs.public, "ranges": d.pbs.ranges, "values": d.values, "policy": d.policy,
         "value_mask": d.value_mask, "policy_mask": d.policy_mask, "filled": state.replay.filled,
         "uses": state.replay.uses, "history": state.actors.history, "games": state.actors.games}
  for i, x in enumerate(jax.tree_util.tree_leaves(state.learner.params)):
    out[f"param{i}"] = x
  return {k: np.asarray(v) for k, v in out.items()}, state


@pytest.mark.slow
def test_p_td1_0_reproduces_the_reference_trajectory():
  """p_td1 = 0 trains exactly as the reference: :data:`REFERENCE` holds the replay buffer,
  the games' positions and the network after 4 iterations (actors, query solver, learner) of
  ``_trajectory`` on Kuhn with the tiny preset, written by the code whose searches log a
  uniform sample of all their queries and label main-line values with the gadget's ranges
  (the first reference, written before TD(1) targets existed, matched the code until then)."""
  g = jaxgt.load("kuhn_poker")
  tr = loop.trainer_for(g, TINY)
  assert TINY.p_td1 == 0
  got, state = _trajectory(tr)
  want = dict(np.load(REFERENCE))
  assert sorted(got) == sorted(want)
  for k in want:  # floats to rounding (another CPU's XLA code may round differently)
    if np.issubdtype(want[k].dtype, np.floating):
      np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-7, err_msg=k)
    else:
      np.testing.assert_array_equal(got[k], want[k], err_msg=k)
  assert int(want["filled"].sum()) > 8 and int(want["games"]) > 0  # not a trivial trajectory
  assert not np.any(np.asarray(state.actors.pending_valid))


def _realised(tree, h, s):
  """The deepest ancestor of history ``h`` (inclusive) in public state ``s`` (NumPy)."""
  while h >= 0 and int(tree.history_public[h]) != s:
    h = int(tree.parent[h])
  return h


def _td1_trainer(p_td1, num_actors):
  g = jaxgt.load("kuhn_poker")
  return g, loop.trainer_for(g, dataclasses.replace(TINY, p_td1=p_td1, num_actors=num_actors))


@pytest.mark.slow
def test_p_td1_1_writes_the_realised_payoffs_on_the_held_slots_only():
  """With p_td1 = 1 every main-line example waits for its game's end, then is written with
  value ``c_p(I) u_p(z)`` on each player's held information state (``u_p(z)`` the realised
  terminal's payoff, ``c_p(I)`` the PBS's opponent-range and chance weight of ``I``: the
  network-scale counterfactual convention of the search targets) and masked elsewhere.
  The expectation is rebuilt from the games' positions and terminals by NumPy."""
  g, tr = _td1_trainer(1.0, 4)
  tree, enc = g.tree, tr.model.encoding
  state = tr.init(0)
  rb = buffers.replay_buffer(enc, 256)
  qb = buffers.query_buffer(enc, 256)
  actors = state.actors
  G = tr.config.num_actors
  decisions = [[] for _ in range(G)]
  expected = []  # (decision history, terminal) in write order
  for i in range(10):
    before = np.asarray(actors.history)
    actors, rb, qb, m = tr.actors.step(state.learner.params, actors, rb, qb,
                                       jax.random.PRNGKey(i))
    assert int(m["td1_sampled"]) == G  # every decision
    for gi in range(G):
      decisions[gi].append(int(before[gi]))
    for gi, z in enumerate(np.asarray(m["terminal"])):
      if z >= 0:
        expected += [(h, int(z)) for h in decisions[gi]]
        decisions[gi] = []
  n = int(rb.added)
  assert n == len(expected) > 10
  assert int(np.sum(np.asarray(actors.pending_valid))) == sum(map(len, decisions))
  d = jax.tree_util.tree_map(np.asarray, rb.data)
  roots = 0
  for j, (h, z) in enumerate(expected):
    s = int(d.pbs.public[j])
    hs = _realised(tree, h, s)
    assert hs >= 0, (j, h, s)  # the example's public state is on the decision's path
    u0 = float(tree.terminal_payoff[tree.history_terminal[z]])
    assert _realised(tree, z, int(tree.history_public[h])) == h  # z follows h
    want_mask = np.zeros((2, enc.k_max), bool)
    want = np.zeros((2, enc.k_max))
    for p in (0, 1):
      k = int(np.flatnonzero(enc.slots[s, p] == enc.public_tree.aug[p][hs])[0])
      want_mask[p, k] = True
      rows = np.flatnonzero((enc.hist[s] >= 0) & (enc.hist_slot[s, p] == k))
      c = sum(enc.hist_q[s, m] * d.pbs.ranges[j, 1 - p, enc.hist_slot[s, 1 - p, m]] for m in rows)
      want[p, k] = c * (u0 if p == 0 else -u0)
    np.testing.assert_array_equal(d.value_mask[j], want_mask, err_msg=str(j))
    np.testing.assert_allclose(d.values[j], want, rtol=1e-5, atol=1e-7, err_msg=str(j))
    roots += s == 0
  assert roots < n  # not only game-root examples: re-solves at later public states too
  assert np.any(np.abs(d.values[:n]).max((1, 2)) > 0)


@pytest.mark.slow
def test_td1_targets_are_drawn_with_probability_p_td1():
  """Over 64 x 32 decisions the held-back share is within 4 standard deviations of p_td1
  (20.7 decisions: a coin of 0.8 p_td1 or 1.2 p_td1 is 6 away);
  every held-back decision is written as one two-slot row when its game ends (or still
  pending), every other as a search row."""
  p = 0.3
  g, tr = _td1_trainer(p, 64)
  enc = tr.model.encoding
  state = tr.init(1)
  rb = buffers.replay_buffer(enc, 4096)
  qb = buffers.query_buffer(enc, 16)
  actors = state.actors
  sampled = added = searches = 0
  for i in range(32):
    actors, rb, qb, m = tr.actors.step(state.learner.params, actors, rb, qb,
                                       jax.random.PRNGKey(100 + i))
    sampled += int(m["td1_sampled"])
    added += int(m["td1_added"])
    searches += int(m["searches"])
  assert searches == 2048
  assert abs(sampled - p * searches) < 4 * math.sqrt(searches * p * (1 - p)), sampled
  assert added + int(np.sum(np.asarray(actors.pending_valid))) == sampled
  n = int(rb.added)
  assert n == searches - sampled + added
  slots = np.asarray(rb.data.value_mask[:n]).sum((1, 2))
  full = enc.mask[np.asarray(rb.data.pbs.public[:n])].sum((1, 2))
  assert int(np.sum(slots <= 2)) >= added  # TD(1) rows: the two held slots at most
  assert int(np.sum(slots == full)) >= searches - sampled  # search rows: every slot


def test_checkpoint_retention_keeps_the_newest_and_the_milestones(tmp_path):
  """keep_checkpoints / keep_checkpoint_every: after each save the run directory holds the
  newest checkpoints and the oldest of each window, and the run resumes from the newest."""
  g = jaxgt.load("kuhn_poker")
  cfg = dataclasses.replace(TINY, keep_checkpoints=2, keep_checkpoint_every=3)
  tr = loop.trainer_for(g, cfg)
  state = tr.init(0)
  for step in range(1, 7):  # what train() saves with checkpoint_every=1
    loop.save(tr, tmp_path, state.replace(learner_steps=np.int32(step)))
  # windows of 3 steps keep 1 and 3; 5 and 6 are the newest two
  assert sorted(int(p.name) for p in (tmp_path / loop.CHECKPOINTS).iterdir()
                if p.name.isdigit()) == [1, 3, 5, 6]
  assert int(loop.restore(tr, tmp_path, 0).learner_steps) == 6
  for bad, message in (({"keep_checkpoints": -1}, "keep_checkpoints"),
                       ({"keep_checkpoint_every": 5}, "needs keep_checkpoints")):
    with pytest.raises(ValueError, match=message):
      dataclasses.replace(TINY, **bad)


@pytest.mark.slow
def test_main_line_values_are_labelled_with_the_ranges_they_were_computed_under():
  """A re-solve's root values are computed under the re-solving player's given range and the
  gadget's opponent ranges, averaged with the values' weights: its example's PBS holds
  exactly those ranges (rebuilt here from the gadget's state: its range sums normalised),
  which differ from the ranges the re-solve started from; the played PBS (TD(1) rows) holds
  the latter."""
  from jaxgt.nets import gtcfr_evaluator
  g = jaxgt.load("kuhn_poker")
  tr = loop.trainer_for(g, dataclasses.replace(TINY, num_actors=8))
  sp = tr.actors
  assert sp.agent.alpha is not None  # the modified gadget: its average range is range_sum's
  state = tr.init(0)
  params = state.learner.params
  enc = tr.model.encoding
  smap = gtcfr_evaluator.slot_map(sp.source, enc)
  rb = buffers.replay_buffer(enc, 256)
  qb = buffers.query_buffer(enc, 256)

  def search(summary, history, key):
    public, player = sp.tree.history_public[history], sp.tree.player[history]
    _, ranges, _, _, on = sp.agent.decision_args(summary, public, player)
    _, _, ex, _, _, res, played = sp._search(params, summary, history, key)
    back = lambda r: gtcfr_evaluator.to_device_order(smap, ex.pbs.public, r)
    return (ranges, on, player, res.state.gadget.range_sum, back(ex.pbs.ranges),
            back(played.ranges))

  search = jax.jit(jax.vmap(search))
  actors = state.actors
  resolves = moved = 0
  for i in range(4):
    keys = jax.random.split(jax.random.PRNGKey(10 + i), sp.config.num_actors)
    out = [np.asarray(x) for x in search(actors.summary, actors.history, keys)]
    for given, on, player, range_sum, label, played in zip(*out):
      mask = label > 0  # slots of the public state
      want = given.astype(np.float64).copy()
      if on:
        o = 1 - int(player)
        want[o] = range_sum / range_sum.sum()
        resolves += 1
        moved += np.abs(want[o] - given[o]).sum() > 1e-3
      for p in (0, 1):
        want[p] = np.where(mask[p], want[p], 0) / np.sum(np.where(mask[p], want[p], 0))
        np.testing.assert_allclose(label[p], want[p], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(played[p], np.where(mask[p], given[p], 0)
                                   / np.sum(np.where(mask[p], given[p], 0)), rtol=1e-5,
                                   atol=1e-6)
    actors, rb, qb, _ = sp.step(params, actors, rb, qb, jax.random.PRNGKey(10 + i))
  assert resolves > 4 and moved > 0  # re-solves whose gadget moved the opponent's range


def _root_query_targets(cfg, params_seed):
  """The value targets ``[2, K]`` one query solve writes for Kuhn poker's root PBS (root
  ranges) under ``cfg`` with network parameters drawn from ``params_seed``, and the trainer."""
  from jaxgt.nets import cvpn
  from jaxgt.nets.encoding import PBS

  tr = loop.trainer_for(jaxgt.load("kuhn_poker"), cfg)
  enc = tr.model.encoding
  replay = buffers.replay_buffer(enc, cfg.replay_capacity)
  queries = buffers.query_buffer(enc, cfg.query_capacity)
  K = enc.k_max
  root = PBS(public=jnp.zeros((1,), jnp.int32),
             ranges=jnp.where(jnp.asarray(enc.mask)[0][None], 1.0 / 3.0, 0.0).astype(jnp.float32))
  queries = buffers.add_queries(queries, root, jnp.ones((1,), bool))
  params = cvpn.init(tr.model, jax.random.PRNGKey(params_seed))
  replay, _, metrics = tr.solver.step(params, replay, queries, jax.random.PRNGKey(7))
  assert int(metrics["solved"]) == 1
  assert int(replay.added) == 1 and bool(replay.data.value_mask[0].any())
  assert replay.data.values.shape[1:] == (2, K)
  return tr, root, np.asarray(replay.data.values[0])


def test_exact_leaf_query_solves_give_network_free_targets_at_the_game_value():
  """With solver_leaves "exact" a query solve values its leaves by solving the rest of the
  game: Kuhn poker's root targets do not depend on the network's parameters and value the
  root at the game's value, -1/18 for player 0 (1000 CFR iterations: within 3e-3); with the
  network at the leaves the targets move with its parameters."""
  from jaxgt.nets.encoding import exact_cfvs
  cfg = dataclasses.replace(TINY, solver_batch=1, solver_expansions_per_update=0.002,
                            solver_leaves="exact")
  tr, root, a = _root_query_targets(cfg, 0)
  assert tr.solver.evaluator.name != tr.actors.evaluator.name
  _, _, b = _root_query_targets(cfg, 1)
  np.testing.assert_array_equal(a, b)
  # player 0's expected value = sum_k r0(k) v0(k) / sum_k r0(k) c0(k), c0 the counterfactual
  # reach (exact_cfvs with unit utilities)
  ranges = np.asarray(root.ranges[0])
  reach = np.asarray(exact_cfvs(tr.model.encoding, root.public, root.ranges,
                                jnp.ones((1, tr.model.encoding.hist.shape[-1]))))[0]
  value = float(ranges[0] @ a[0] / (ranges[0] @ reach[0]))
  assert abs(value - (-1.0 / 18.0)) < 3e-3, value
  net = dataclasses.replace(cfg, solver_leaves="network")
  _, _, c = _root_query_targets(net, 0)
  _, _, d = _root_query_targets(net, 1)
  assert np.abs(c - d).max() > 1e-3


def test_exact_solver_leaves_are_refused_on_games_played_through_their_rules():
  """solver_leaves must be "network" or "exact", and "exact" needs an enumerated game."""
  from jaxgt.games import make_from_string
  with pytest.raises(ValueError, match="solver_leaves must be one of"):
    config_lib.from_dict({"solver_leaves": "oracle"})
  with pytest.raises(ValueError, match="solver_leaves must be 'network'"):
    loop.DeviceTrainer(make_from_string("kuhn_poker"),
                       dataclasses.replace(TINY, solver_leaves="exact"))
