"""GT-CFR agents on device games (grown from the rules, root-anchored and re-solving) against
the compiled game's GT-CFR agent, their use of public information only, matches through the
command line, and the sog kind's network read from a device game's run."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent, deal_steps
from jaxgt.agents.gtcfr_agent import GTCFRAgent
from jaxgt.agents.specs import make_agent, parse_spec
from jaxgt.evaluation import referee
from jaxgt.games import make_from_string
from jaxgt.nets import cvpn
from jaxgt.nets.factored_encoding import FactoredEncoding
from jaxgt.search import evaluator as evaluators
from jaxgt.training import checkpoint, device_run
from jaxgt.training.config import TrainConfig

SIMS, CAPACITY = 20, 200


def _position(game, actions):
  """The match position after ``actions`` (deals included) and the compiled game's history."""
  pos = referee.root(game)
  for a in actions:
    pos = referee.draw(game, pos, jnp.eye(game.num_distinct)[a], jax.random.key(0), jnp.float64)
  return pos


def _history(comp, actions):
  rules = comp.rules()
  h = rules.init()
  for a in actions:
    h = rules.step(h, a)
  return int(h)


@pytest.fixture(scope="module")
def kuhn():
  game = make_from_string("kuhn_poker")
  agent = DeviceGTCFRAgent(game, simulations=SIMS, capacity=CAPACITY, resolve=False)
  return game, agent, jax.jit(agent.act)


def _compiled_policy(comp, agent, actions, key):
  """The compiled agent's root-anchored search at the decision after ``actions`` with ``key``
  (its own key schedule aside), read at the acting information state."""
  h = _history(comp, actions)
  public = int(comp.tree.history_public[h])
  res = agent._run_search(jnp.zeros((), jnp.int32), agent.ranges, key, agent._path_fn(public))
  return np.asarray(agent.read_policy(res, jnp.asarray(h)))


@pytest.mark.parametrize("name,lines", [
    ("kuhn_poker", [[0, 1], [2, 0, 1], [1, 2, 0, 1]]),  # deals, then pass / bet
    pytest.param("leduc_poker", [[0, 1], [3, 5, 1], [0, 4, 2, 1, 3, 2]],
                 marks=pytest.mark.slow)])  # deals, raise, call, the public card, ...
def test_policies_equal_the_compiled_agents_root_anchored_search(name, lines, kuhn):
  """The device agent grown from the rules from the post-deal root plays the same policy as the
  compiled game's GT-CFR agent searching from the game's root (resolve=False) with the same key
  and configuration, zero leaf values; player 0 and 1, after public chance too (Leduc)."""
  if name == "kuhn_poker":
    game, agent, act = kuhn
  else:
    game = make_from_string(name)
    agent = DeviceGTCFRAgent(game, simulations=SIMS, capacity=CAPACITY, resolve=False)
    act = jax.jit(agent.act)
  comp = jaxgt.load(name)
  ref = GTCFRAgent(comp, simulations=SIMS, capacity=CAPACITY, evaluator="zero", resolve=False)
  players = set()
  for i, actions in enumerate(lines):
    key = jax.random.key(7 + i)
    pos = _position(game, actions)
    got, state = act(key, agent.init(key), pos)
    want = _compiled_policy(comp, ref, actions, key)
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-9)
    assert abs(float(np.sum(want)) - 1.0) < 1e-9 and int(state.nodes) > 1
    players.add(int(game.current_player(pos.state)))
  assert players == {0, 1}


@pytest.mark.parametrize("name,line,keys", [
    ("kuhn_poker", [2, 0, 0, 1, 0], (2, 0, 0)),  # deals, pass, bet, then player 0 again
    pytest.param("leduc_poker", [0, 4, 2, 1, 3, 1, 0], (0, 0, 0, 0),  # raise, call, the card
                 marks=pytest.mark.slow)])
def test_resolving_policies_equal_the_compiled_agents_resolving_searches(name, line, keys):
  """Continual re-solving grown from the rules plays the compiled game's re-solving GT-CFR
  agent's policies along a line of play: the first search root-anchored, then each re-solve
  from the previous search's summary with the modified gadget (one summary carried through
  both players' decisions, as in self-play; zero leaf values; after public chance too, where
  the rules tree's root values carry another chance scale than the compiled tree's). Keys: ones
  at which both trees draw the same simulation start histories (they order the private pairs
  differently)."""
  game, comp = make_from_string(name), jaxgt.load(name)
  agent = DeviceGTCFRAgent(game, simulations=SIMS, capacity=CAPACITY, resolve=True)
  ref = GTCFRAgent(comp, simulations=SIMS, capacity=CAPACITY, evaluator="zero", resolve=True)
  decide = jax.jit(agent.search_decision)
  rules = comp.rules()
  pos, h = referee.root(game), rules.init()
  summary, state = agent.empty_summary(), ref.init(jax.random.key(0))
  keys, gadget = list(keys), []
  for a in line:
    p = int(game.current_player(pos.state))
    if p in (0, 1):
      key = jax.random.key(keys.pop(0))
      res, summary = decide(key, summary, pos.actions, pos.length, jnp.int32(p))
      got = np.asarray(agent.read_policy(res, p, *agent.decision(pos.state)[1:]))
      public = int(comp.tree.history_public[h])
      root, ranges, opp_values, path, on = ref.decision_args(state, public, p)
      want_res = ref._run_search(root, ranges, key, path, p, opp_values, on)
      state = ref.after_search(state, want_res, public)
      np.testing.assert_allclose(got, np.asarray(ref.read_policy(want_res, jnp.asarray(h))),
                                 atol=1e-9)
      gadget.append(bool(on))
    pos = referee.draw(game, pos, jnp.eye(game.num_distinct)[a], jax.random.key(0), jnp.float64)
    h = rules.step(h, a)
  assert not keys and gadget[0] is False and all(gadget[1:])


def test_the_policy_does_not_depend_on_the_opponents_private_state(kuhn):
  """Two positions that differ only in the opponent's card give the same policy (the search
  reads the public steps after the deals and the actor's own card only); another own card
  reads another row of the same search."""
  game, agent, act = kuhn
  key = jax.random.key(3)
  # player 1 holds card 1 after player 0's bet; player 0 holds card 0 or 2
  second = [np.asarray(act(key, agent.init(key), _position(game, [k, 1, 1]))[0]) for k in (0, 2)]
  np.testing.assert_array_equal(second[0], second[1])
  # player 0 holds card 2 at its first decision; player 1 holds card 0 or 1
  first = [np.asarray(act(key, agent.init(key), _position(game, [2, k]))[0]) for k in (0, 1)]
  np.testing.assert_array_equal(first[0], first[1])
  other = np.asarray(act(key, agent.init(key), _position(game, [0, 1]))[0])  # own card 0
  assert not np.allclose(other, first[0])


@pytest.mark.parametrize("name", ["kuhn_poker",
                                  pytest.param("liars_dice(numdice=1)", marks=pytest.mark.slow)])
def test_jaxgt_match_plays_gtcfr_through_the_rules(name, capsys):
  """A game played through its rules (a history limit below its size): the GT-CFR agent's
  matches run jitted, its tree's fill reported."""
  from jaxgt.cli import main
  code = main(["match", name, "gtcfr(simulations=4,dtype=float32)", "random", "--matches", "2",
               "--max-histories", "10", "--json"])
  assert code == 0
  captured = capsys.readouterr()
  out = json.loads(captured.out.strip().splitlines()[-1])
  assert out["episodes"] == 2 and out["memory"][1] is None
  assert out["memory"][0]["rows"][0] > 1
  assert "does not trace" not in captured.err and "MiB of search state" in captured.err


@pytest.mark.slow
def test_jaxgt_match_plays_gtcfr_on_liars_dice_two_dice_each(capsys):
  from jaxgt.cli import main
  code = main(["match", "liars_dice(numdice=2)", "gtcfr(simulations=10,dtype=float32)",
               "random", "--matches", "2"])
  assert code == 0
  out = capsys.readouterr().out
  assert "win rate of gtcfr" in out and "search tree nodes in use" in out


def test_bad_input_is_refused_before_compiling():
  game = make_from_string("liars_dice(numdice=2)")
  assert deal_steps(game) == 4  # two dice each, one roll a step
  # the longest branch after the deals with the children of each public state
  need = 1 + 25 * (game.max_length - 4 + 1)
  with pytest.raises(ValueError, match=f"use at least {need} nodes"):
    make_agent(game, f"gtcfr(simulations=2,capacity={need - 1})")
  with pytest.raises(ValueError, match="resolve must be a bool"):
    DeviceGTCFRAgent(game, simulations=2, resolve="yes")
  with pytest.raises(ValueError, match="alpha"):
    DeviceGTCFRAgent(game, simulations=2, resolve=True, alpha=1.5)
  with pytest.raises(ValueError, match="enumerated game"):
    make_agent(game, "gtcfr(simulations=2,evaluator=exact)")
  with pytest.raises(TypeError, match="DeviceGame"):
    DeviceGTCFRAgent(jaxgt.load("kuhn_poker"), simulations=2)
  with pytest.raises(ValueError, match="factorisation"):
    DeviceGTCFRAgent(make_from_string("goofspiel(num_cards=3)"), simulations=2)
  agent = make_agent(game, f"gtcfr(simulations=2,capacity={need})")
  assert isinstance(agent, DeviceGTCFRAgent) and agent.config.capacity == need
  assert agent.config.tree_form == "factored" and agent.resolve  # re-solving unless told
  # the state's bytes from its shapes: at least the tree's [N, M] history slots, and the
  # previous search's summary a re-solving agent keeps
  anchored = make_agent(game, f"gtcfr(simulations=2,capacity={need},resolve=false)")
  assert anchored.memory_bytes() > need * 21 * 21 * 4 and not anchored.resolve
  assert agent.memory_bytes() > anchored.memory_bytes() + need * 3 * 21 * 4
  spec = parse_spec("gtcfr")  # an enumerated game keeps exact leaves and re-solving
  assert spec.params["resolve"] is True and spec.params["evaluator"] == "auto"
  assert make_agent(jaxgt.load("kuhn_poker"), "gtcfr(simulations=2)").resolve


def _run_dir(out, game_string, model, params):
  """A run directory ``out`` of ``game_string`` holding ``params`` as its learner's network."""
  out.mkdir()
  config = TrainConfig(hidden=model.hidden)
  (out / "config.json").write_text(json.dumps({"game": game_string, "config": config.to_json()}))
  meta = {"game": game_string, "network": "cvpn", "hidden": list(model.hidden),
          "embed_dim": 0, "k_max": model.encoding.k_max,
          "num_actions": model.encoding.num_actions,
          "feature_size": model.encoding.feature_size}
  checkpoint.save(out / "checkpoints", 3, {"learner": {"params": params, "step": jnp.int32(3)}},
                  meta)
  return out


def test_sog_reads_a_device_games_network_and_refuses_another_games(tmp_path):
  game = make_from_string("kuhn_poker")
  model = cvpn.CVPN(FactoredEncoding(game), hidden=(8,))
  params = cvpn.init(model, jax.random.PRNGKey(1))
  out = _run_dir(tmp_path / "kuhn", "kuhn_poker", model, params)
  got_model, got, config = device_run.load_network(out, game)
  assert got_model.hidden == (8,) and config.hidden == (8,)
  for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(params)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  agent = make_agent(game, f"sog(checkpoint={out},simulations=3)")
  assert isinstance(agent, DeviceGTCFRAgent) and agent.evaluator.name == "cvpn"
  with pytest.raises(ValueError, match="holds a run of kuhn_poker"):
    make_agent(make_from_string("leduc_poker"), f"sog(checkpoint={out},simulations=3)")
  # a run that names the game but holds another game's network (Leduc's widths)
  leduc = cvpn.CVPN(FactoredEncoding(make_from_string("leduc_poker")), hidden=(8,))
  other = _run_dir(tmp_path / "other", "kuhn_poker", leduc,
                   cvpn.init(leduc, jax.random.PRNGKey(0)))
  with pytest.raises(ValueError, match="another network"):
    make_agent(game, f"sog(checkpoint={other},simulations=3)")


@pytest.mark.slow
def test_sog_with_a_network_plays_a_device_game():
  """The network evaluator on the rules tree: the agent plays a valid policy."""
  game = make_from_string("kuhn_poker")
  model = cvpn.CVPN(FactoredEncoding(game), hidden=(8,))
  params = cvpn.init(model, jax.random.PRNGKey(1))
  agent = device_run.device_sog_agent(game, model, params, simulations=4, dtype="float64")
  key = jax.random.key(0)
  probs, _ = jax.jit(agent.act)(key, agent.init(key), _position(game, [0, 1]))
  assert abs(float(jnp.sum(probs)) - 1.0) < 1e-6
  assert isinstance(agent.evaluator, evaluators.Evaluator)


def test_constructed_policy_is_the_agents_play_at_every_information_state(kuhn):
  """construct_rules_policy (one batched search per public state, read at each information
  state's private state) equals the agent's own act at the first history of every information
  state of the enumerated game, with the key fold_in(key, public state); its exploitability,
  computed exactly on the enumerated game, falls with more simulations."""
  from jaxgt.core.expand import history_path
  from jaxgt.core.game_tree import infostate_histories
  from jaxgt.core.evaluate import evaluate
  from jaxgt.evaluation.construct import construct_rules_policy
  game, agent, act = kuhn
  comp = jaxgt.load("kuhn_poker")
  key = jax.random.key(5)
  got = construct_rules_policy(agent, key, game=comp, batch=3)
  tree = comp.tree
  for p in (0, 1):
    assert got[p].shape == (tree.num_infostates[p], tree.num_actions)
    for i, h in enumerate(infostate_histories(tree, p)):
      k = jax.random.fold_in(key, int(tree.history_public[h]))
      want, _ = act(k, agent.init(k), _position(game, history_path(tree.parent, tree.action,
                                                                   int(h))))
      np.testing.assert_allclose(got[p][i], np.asarray(want), atol=1e-12,
                                 err_msg=comp.infostate_keys[p][i])
  few = DeviceGTCFRAgent(game, simulations=2, resolve=False)
  worse = construct_rules_policy(few, key, game=comp)
  assert evaluate(comp, got).exploitability < evaluate(comp, worse).exploitability


def test_resolving_construction_is_the_agents_play_along_each_players_decisions():
  """A re-solving agent's constructed policy (each player's public states searched level by
  level from the summaries of the previous level) equals the agent playing, decision by
  decision, the player's own decisions on the way to every information state, each search
  with the key fold_in(key, public state) and the summary of the player's previous search;
  a player's first decisions are the root-anchored agent's, its later ones re-solve."""
  from jaxgt.core.expand import history_path
  from jaxgt.core.game_tree import infostate_histories
  from jaxgt.evaluation.construct import construct_rules_policy
  game, comp = make_from_string("kuhn_poker"), jaxgt.load("kuhn_poker")
  agent = DeviceGTCFRAgent(game, simulations=SIMS, capacity=CAPACITY, resolve=True)
  key = jax.random.key(5)
  got = construct_rules_policy(agent, key, game=comp, batch=2)
  tree, rules = comp.tree, comp.rules()
  decide = jax.jit(agent.search_decision)
  for p in (0, 1):
    for i, h in enumerate(infostate_histories(tree, p)):
      path = history_path(tree.parent, tree.action, int(h))
      pos, hist, summary = referee.root(game), rules.init(), agent.empty_summary()
      for a in list(path) + [None]:
        if int(tree.player[hist]) == p:  # the player's decisions on the way, then its own
          k = jax.random.fold_in(key, int(tree.history_public[hist]))
          res, summary = decide(k, summary, pos.actions, pos.length, jnp.int32(p))
        if a is None:
          break
        pos = referee.draw(game, pos, jnp.eye(game.num_distinct)[a], jax.random.key(0),
                           jnp.float64)
        hist = rules.step(hist, a)
      want = agent.read_policy(res, p, *agent.decision(pos.state)[1:])
      np.testing.assert_allclose(got[p][i], np.asarray(want), atol=1e-12,
                                 err_msg=comp.infostate_keys[p][i])
  anchored = DeviceGTCFRAgent(game, simulations=SIMS, capacity=CAPACITY,
                              resolve=False)
  other = construct_rules_policy(anchored, key, game=comp)
  np.testing.assert_allclose(got[1], other[1], atol=1e-12)  # player 1 acts once: anchored
  assert not np.allclose(got[0], other[0])  # player 0 re-solves after pass, bet


def test_construction_refuses_another_games_tree_and_other_agents(kuhn):
  from jaxgt.evaluation.construct import construct_rules_policy
  game, agent, _ = kuhn
  with pytest.raises(ValueError, match="kuhn_poker enumerated from its rules"):
    construct_rules_policy(agent, jax.random.key(0), game=jaxgt.load("leduc_poker"))
  with pytest.raises(ValueError, match="DeviceGTCFRAgent"):
    construct_rules_policy(make_agent(jaxgt.load("kuhn_poker"), "random"), jax.random.key(0))
