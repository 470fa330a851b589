"""Agents' policy tables enter the traced match program as arguments, not compiled constants."""

import dataclasses

import jax
import numpy as np

import jaxgt
from jaxgt.agents.base import DevicePolicyAgent, PolicyAgent
from jaxgt.core.tree_rules import rules_of
from jaxgt.evaluation import match, referee
from jaxgt.evaluation.device_policy import tabular_device_policy


@dataclasses.dataclass
class ClosedPolicyAgent(PolicyAgent):
  """A :class:`PolicyAgent` whose table is closed over (no ``array_fields``)."""

  array_fields = ()


def _random_table(compiled, seed):
  rng = np.random.default_rng(seed)
  probs = tuple(np.where(np.asarray(pt.legal), rng.random(np.shape(pt.legal)), 0.0)
                for pt in compiled.tree.players)
  return tuple(p / p.sum(1, keepdims=True) for p in probs)


def _program_text(game, agents, M=4):
  ref = referee.Referee(rules_of(game, np.float32), tuple(agents), np.float32)
  program, fields = referee.match_program(ref, M)
  keys = jax.random.split(jax.random.key(0), M)
  return program.lower(keys, np.zeros(M, np.int32), None, fields).as_text(), fields


def test_a_policy_table_is_an_argument_of_the_match_program():
  """Two different Leduc tables give the same program text; closed over, they do not (the
  table is then a constant of the program, which makes its text far longer)."""
  g = jaxgt.load("leduc_poker")
  a, b = _random_table(g, 0), _random_table(g, 1)
  text_a, fields = _program_text(g, (PolicyAgent(g, a), PolicyAgent(g, a)))
  text_b, _ = _program_text(g, (PolicyAgent(g, b), PolicyAgent(g, b)))
  assert set(fields[0]) == {"policy"} and text_a == text_b
  closed_a, closed_fields = _program_text(g, (ClosedPolicyAgent(g, a), ClosedPolicyAgent(g, a)))
  closed_b, _ = _program_text(g, (ClosedPolicyAgent(g, b), ClosedPolicyAgent(g, b)))
  assert closed_fields == ({}, {}) and closed_a != closed_b
  table_bytes = sum(x.size for x in a) * 4
  assert len(closed_a) - len(text_a) > table_bytes  # the constant's digits


def test_a_tabular_device_policy_is_an_argument_and_plays_the_same_matches():
  """On Kuhn's device rules, the table passed as an argument plays match for match what the
  same table closed over in a plain function plays."""
  device = jaxgt.games.make("kuhn_poker")
  compiled = jaxgt.load("kuhn_poker")
  table = tabular_device_policy(compiled, _random_table(compiled, 2))
  assert set(referee.array_fields(DevicePolicyAgent(device, table))) == {"policy"}
  plain = DevicePolicyAgent(device, lambda s, p: table(s, p))  # a function: compiled in
  assert referee.array_fields(plain) == {}
  key = jax.random.key(3)
  got = match.play(device, DevicePolicyAgent(device, table), plain, 64, key, mode="jit")
  want = match.play(device, plain, plain, 64, key, mode="jit")
  np.testing.assert_array_equal(got.payoffs, want.payoffs)
  assert got.traced
