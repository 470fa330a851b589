"""Public belief states of device games on factored ranges: the network-scale values against
the compiled game's encoding (history by history), and a CVPN fitted on factored PBSs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import sequence_form
from jaxgt.core.factored import build_factored_tree, dealt_root
from jaxgt.core.public_tree import history_values
from jaxgt.games import make_from_string
from jaxgt.games.base import CHANCE
from jaxgt.nets import cvpn
from jaxgt.nets.encoding import PBS, build_encoding, exact_cfvs, history_utilities
from jaxgt.nets.factored_encoding import FactoredEncoding
from jaxgt.nets import factored_encoding


def _states(game, actions):
  """The dealt root and the states after each prefix of ``actions`` (chance: its first
  outcome of positive probability when ``None``)."""
  s = dealt_root(game)
  out = [s]
  for a in actions:
    if a is None:
      assert int(game.current_player(s)) == CHANCE
      a = int(np.argmax(np.asarray(game.chance_probs(s)) > 0))
    s = game.step(s, jnp.int32(a))
    out.append(s)
  return out


def _uniform(tree):
  return tuple(jnp.asarray(sequence_form.uniform(np.repeat(tree.legal[p], tree.num_private[p],
                                                           axis=0))) for p in (0, 1))


@pytest.mark.parametrize("name,actions", [
    ("kuhn_poker", [0]),
    pytest.param("leduc_poker", [2, 1, None, 1], marks=pytest.mark.slow),  # raise, call, card, check
])
def test_factored_pbs_values_equal_the_compiled_encodings(name, actions):
  """At public states along a line of play, with random ranges and uniform play below, the
  values on a factored tree rooted at the state equal the compiled game's encoding's
  (``jaxgt.nets.encoding.exact_cfvs``), slot by slot through the information-state strings."""
  game = make_from_string(name)
  comp = jaxgt.load(name)
  enc = build_encoding(comp)
  fenc = FactoredEncoding(game)
  tree64 = comp.device_tree("float64")
  hv = history_values(tree64, sequence_form.uniform_policy(tree64, jnp.float64))
  rng = np.random.default_rng(0)
  checked = 0
  for s in _states(game, actions):
    if int(game.current_player(s)) == CHANCE:
      continue
    ps = comp.public_index()[game.public_name(np.asarray(game.public_key(s)))]
    ft = build_factored_tree(game, root=s)
    mask = np.asarray(fenc.masks(jax.tree.map(lambda x: x[None], s))[0][0])
    ranges_c = np.zeros((2, enc.k_max))
    ranges_f = np.zeros((2, fenc.k_max))
    slot_of = []
    for p in (0, 1):
      slots = enc.slots[ps, p]
      n = int(np.sum(slots >= 0))
      r = rng.dirichlet(np.ones(n))
      ranges_c[p, :n] = r
      names = {comp.aug_keys[p][slots[j]]: j for j in range(n)}
      K = game.num_private[p]
      strings = [game.info_string(np.asarray(game.info_key(game.with_private(s, p, k), p)), p)
                 for k in range(K)]
      match = {k: names[t] for k, t in enumerate(strings) if t in names}
      assert set(match) == set(np.flatnonzero(mask[p]))  # dealt private states = slots
      for k, j in match.items():
        ranges_f[p, k] = r[j]
      slot_of.append(match)
    want = np.asarray(exact_cfvs(enc, jnp.asarray([ps]), jnp.asarray(ranges_c[None]),
                                 history_utilities(enc, jnp.asarray([ps]), hv)))[0]
    got = np.asarray(factored_encoding.exact_cfvs(ft, _uniform(ft), ranges_f))
    # the counterfactual masses (expected values' divisors): the pairs' chance against the
    # compiled game's histories
    mass_c = np.asarray(enc.counterfactual_mass(jnp.asarray([ps]), jnp.asarray(ranges_c[None])))[0]
    mass_f = np.asarray(fenc.counterfactual_mass(jax.tree.map(lambda x: x[None], s),
                                                 jnp.asarray(ranges_f[None])))[0]
    for p in (0, 1):
      for k, j in slot_of[p].items():
        assert abs(got[p, k] - want[p, j]) <= 1e-9 * max(1.0, abs(want[p, j]))
        assert abs(mass_f[p, k] - mass_c[p, j]) <= 1e-12
        # expected values are bounded by the largest payoff
        assert abs(got[p, k]) <= (1 + 1e-9) * mass_f[p, k] * fenc.value_unit
      checked += 1
  assert checked >= 2 * len(actions)


@pytest.mark.parametrize("name,actions,steps,space", [
    ("kuhn_poker", [0], 600, "counterfactual"), ("kuhn_poker", [0], 600, "expected"),
    # the dealt root, a bid of 1-3, a bid of 2-1 (the 1-6 rule)
    pytest.param("liars_dice(numdice=1)", [2, 6], 1500, "counterfactual", marks=pytest.mark.slow),
    # two dice each, three faces: unequal private-state probabilities (pairs 1/9, others 2/9)
    pytest.param("liars_dice(numdice=2,dice_sides=3)", [1, 5], 1500, "expected",
                 marks=pytest.mark.slow)])
def test_a_cvpn_fits_exact_values_on_factored_pbss(name, actions, steps, space):
  """The CVPN reads device-game PBSs (states and ranges over private states): fitted to exact
  values of public states under uniform play, in either value space, its value error falls
  far below the untrained network's."""
  game = make_from_string(name)
  fenc = FactoredEncoding(game)
  K = fenc.k_max
  rng = np.random.default_rng(1)
  states, ranges, targets = [], [], []
  for s in _states(game, actions):
    ft = build_factored_tree(game, root=s)
    pol = _uniform(ft)
    for _ in range(40):
      r = np.stack([rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K))])
      states.append(s)
      ranges.append(r)
      targets.append(np.asarray(factored_encoding.exact_cfvs(ft, pol, r)))
  public = jax.tree.map(lambda *x: jnp.stack(x), *states)
  pbs = PBS(public=public, ranges=jnp.asarray(np.stack(ranges), jnp.float32))
  tv = cvpn.CVPNTargets(values=jnp.asarray(np.stack(targets), jnp.float32))
  model = cvpn.CVPN(fenc, hidden=(64, 64), value_space=space)
  params = cvpn.init(model, jax.random.PRNGKey(0))
  before = float(jnp.mean(jnp.abs(model.apply(params, pbs).values - tv.values)))
  params, loss = cvpn.fit(model, params, pbs, tv, key=jax.random.PRNGKey(1), steps=steps,
                          learning_rate=3e-3)
  after = float(jnp.mean(jnp.abs(model.apply(params, pbs).values - tv.values)))
  assert after < 0.2 * before and float(loss[-1]) < float(loss[0])
  out = model.apply(params, pbs)
  mask, legal = fenc.masks(public)
  assert out.policy.shape == (len(states), 2, K, game.num_actions)
  np.testing.assert_allclose(np.asarray(jnp.sum(out.policy, -1))[np.asarray(legal.any(-1))],
                             1.0, rtol=1e-5)


def test_factored_encoding_refuses_games_that_do_not_factor():
  with pytest.raises(ValueError, match="factorisation"):
    FactoredEncoding(make_from_string("goofspiel(num_cards=3)"))
  with pytest.raises(TypeError, match="device game"):
    FactoredEncoding(jaxgt.load("kuhn_poker"))
  with pytest.raises(ValueError, match="compiled game"):
    model = cvpn.CVPN(FactoredEncoding(make_from_string("kuhn_poker")), embed_dim=4)
    cvpn.init(model, jax.random.PRNGKey(0))
