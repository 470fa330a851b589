"""Per-sequence sums over terminals by grouped row sums (compiler.terminal_groups,
sequence_form.terminal_sums) against NumPy's scatter-add."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import compiler, sequence_form

GAMES = ["kuhn_poker", "leduc_poker", "goofspiel(num_cards=4)", "liars_dice(numdice=1)"]


def reference_sums(leaf, seq, num_sequences):
  out = np.zeros(num_sequences)
  np.add.at(out, seq, leaf)
  return out


@pytest.mark.parametrize("name", GAMES)
def test_groups_partition_the_terminals_by_sequence(name):
  tree = jaxgt.load(name).tree
  for p, pt in enumerate(tree.players):
    seq = np.asarray(tree.terminal_seq[p])
    order, row = np.asarray(pt.terminal_order), np.asarray(pt.terminal_group_row)
    assert sorted(order.tolist()) == list(range(tree.num_terminals))
    lo, first = 0, []
    for n, c in pt.terminal_blocks:
      block = seq[order[lo:lo + n * c]].reshape(n, c)
      assert (block == block[:, :1]).all()  # a row is one sequence's terminals ...
      assert (np.bincount(seq)[block[:, 0]] == c).all()  # ... all of them
      first += block[:, 0].tolist()
      lo += n * c
    assert (row[first] == np.arange(len(first))).all()
    reached = np.zeros(len(row), bool)
    reached[seq] = True
    assert (row[~reached] == len(first)).all()  # no terminal: the appended zero


@pytest.mark.parametrize("name", GAMES)
def test_terminal_sums_equal_a_scatter_add(name):
  tree = jaxgt.load(name).device_tree("float64")
  rng = np.random.default_rng(0)
  for p, pt in enumerate(tree.players):
    assert pt.terminal_blocks  # these games are grouped
    seq = np.asarray(tree.terminal_seq[p])
    S = pt.num_infostates * tree.num_actions + 1
    leaf = rng.normal(size=tree.num_terminals)
    want = reference_sums(leaf, seq, S)
    got = jax.jit(lambda x, pt=pt, s=tree.terminal_seq[p]: sequence_form.terminal_sums(
        pt, x, s, tree.num_actions))(jnp.asarray(leaf))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    batch = rng.normal(size=(3, tree.num_terminals))  # vmapped, as run_batch does
    got = jax.vmap(lambda x, pt=pt, s=tree.terminal_seq[p]: sequence_form.terminal_sums(
        pt, x, s, tree.num_actions))(jnp.asarray(batch))
    for b in range(3):
      np.testing.assert_allclose(np.asarray(got[b]), reference_sums(batch[b], seq, S),
                                 rtol=1e-12, atol=1e-12)
      # batched (a scatter) and single (row sums) add in the same order: the same bits
      single = sequence_form.terminal_sums(pt, jnp.asarray(batch[b]), tree.terminal_seq[p],
                                           tree.num_actions)
      np.testing.assert_array_equal(np.asarray(got[b]), np.asarray(single))


@pytest.mark.parametrize("name", ["leduc_poker", "goofspiel(num_cards=4)"])
def test_leaves_in_grouped_order(name):
  """Leaves computed in the grouped order (terminal_leaf_values with order, leaf_seq None)."""
  tree = jaxgt.load(name).device_tree("float64")
  rng = np.random.default_rng(2)
  for p, pt in enumerate(tree.players):
    order = sequence_form.grouped_order(tree, p)
    assert order is not None
    xo = jnp.asarray(rng.uniform(size=tree.players[1 - p].num_infostates * tree.num_actions + 1))
    leaf = sequence_form.terminal_leaf_values(tree, p, xo)
    np.testing.assert_array_equal(
        np.asarray(sequence_form.terminal_leaf_values(tree, p, xo, order=order)),
        np.asarray(leaf)[np.asarray(order)])
    S = pt.num_infostates * tree.num_actions + 1
    want = reference_sums(np.asarray(leaf), np.asarray(tree.terminal_seq[p]), S)
    sums = lambda x, pt=pt: sequence_form.terminal_sums(pt, x, None, tree.num_actions)
    single = jax.jit(sums)(leaf[order])
    np.testing.assert_allclose(np.asarray(single), want, rtol=1e-12, atol=1e-12)
    batched = jax.vmap(sums)(jnp.stack([leaf[order], 2 * leaf[order]]))  # the batched scatter
    np.testing.assert_array_equal(np.asarray(batched[0]), np.asarray(single))
    np.testing.assert_allclose(np.asarray(batched[1]), 2 * want, rtol=1e-12, atol=1e-12)


def test_padded_terminals_scatter():
  """A tree whose terminals were padded after compilation (shard_game) sums by scatter."""
  tree = jaxgt.load("leduc_poker").device_tree("float64")
  pt = tree.players[0]
  pad = 8
  seq = np.concatenate([np.asarray(tree.terminal_seq[0]),
                        np.full(pad, pt.num_infostates * tree.num_actions)])
  leaf = np.random.default_rng(1).normal(size=len(seq))
  got = sequence_form.terminal_sums(pt, jnp.asarray(leaf), jnp.asarray(seq), tree.num_actions)
  np.testing.assert_allclose(np.asarray(got), reference_sums(leaf, seq, len(got)),
                             rtol=1e-12, atol=1e-12)


def test_too_many_counts_are_not_grouped():
  counts = np.arange(1, compiler.MAX_TERMINAL_GROUPS + 2)  # one more distinct count than allowed
  seq = np.repeat(np.arange(len(counts)), counts)
  assert compiler.terminal_groups(seq, len(counts) + 1) == (None, None, ())
  order, row, blocks = compiler.terminal_groups(seq[seq < 3], 5)  # counts 1, 2, 3; two unreached
  assert blocks == ((1, 1), (1, 2), (1, 3)) and row.tolist() == [0, 1, 2, 3, 3]
  assert order.tolist() == list(range(6))
