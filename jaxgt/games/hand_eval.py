"""Poker hand strength as one comparable int32: the best 5 of 5 to 7 cards, in JAX.

Cards are ints ``rank * 4 + suit`` (ranks ``0..12`` for ``2..A``, suits
``0..3`` for ``c d h s``): ACPC's and OpenSpiel's ``universal_poker`` card
ids, which are also its chance outcome ids. :func:`hand_rank` maps ``[..., N]``
cards (``5 <= N <= 7``, distinct) to ``[...]`` int32 values whose order is the
order of the hands (higher is better, equal exactly for ties): the category in
bits 20-23 (:data:`CATEGORIES`) above up to five rank nibbles, most
significant first (the ranks that decide within the category: the straight's
top card, the quads then the kicker, trips then pair, the five flush cards,
...). The ace plays low in the wheel ``A2345`` (top card ``5``).

Straight and flush detection work on 13-bit rank masks (Cactus Kev's idea of
ranks as bits; a straight is five consecutive bits, found by shifting and
and-ing), so every hand is a handful of integer operations with no table and
no Python control flow on traced values: it jits and vmaps as it is.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

CATEGORIES = ("high card", "pair", "two pair", "three of a kind", "straight", "flush",
              "full house", "four of a kind", "straight flush")
"""``hand_rank(cards) >> 20`` indexes this tuple."""
RANKS = "23456789TJQKA"
SUITS = "cdhs"
_NUM_RANKS = 13


def _top_bit(mask):
  """Index of the highest set bit of ``mask`` (int32 ``[...]``), -1 for 0."""
  return 31 - jax.lax.clz(jnp.asarray(mask, jnp.int32))


def _top_ranks(mask, k: int):
  """The ``k`` highest set bits of ``mask`` as ``k`` nibbles, highest first (0 nibbles where
  the mask runs out, which no category that reads them allows)."""
  code = jnp.zeros(jnp.shape(mask), jnp.int32)
  for _ in range(k):
    top = _top_bit(mask)
    code = code * 16 + jnp.maximum(top, 0)
    mask = jnp.where(top >= 0, mask & ~_bit(top), mask)
  return code


def _straight_top(mask):
  """Top rank of the highest straight in rank mask ``mask`` (the wheel's is 3), -1 if none."""
  ext = (mask << 1) | ((mask >> 12) & 1)  # bit 0: the ace played low; bit r + 1: rank r
  run = ext & (ext >> 1) & (ext >> 2) & (ext >> 3) & (ext >> 4)  # bit j: ranks j-1..j+3
  return jnp.where(run > 0, _top_bit(run) + 3, -1)


def _bit(rank):
  return jnp.left_shift(jnp.int32(1), jnp.maximum(rank, 0))


def hand_rank(cards):
  """int32 ``[...]``: the strength of the best five of ``cards`` (int ``[..., N]``, ``5 <= N <=
  7`` distinct card ids); higher wins, equal ties (see the module docstring)."""
  cards = jnp.asarray(cards, jnp.int32)
  if not 5 <= cards.shape[-1] <= 7:
    raise ValueError(f"hand_rank takes 5 to 7 cards per hand, got {cards.shape[-1]}")
  ranks, suits = cards // 4, cards % 4
  one = jnp.int32(1)
  bits = jnp.left_shift(one, ranks)  # [..., N]
  counts = jnp.sum(ranks[..., :, None] == jnp.arange(_NUM_RANKS, dtype=jnp.int32), axis=-2,
                   dtype=jnp.int32)  # [..., 13]
  weights = jnp.left_shift(one, jnp.arange(_NUM_RANKS, dtype=jnp.int32))

  def ranks_with(pred):
    return jnp.sum(jnp.where(pred, weights, 0), axis=-1, dtype=jnp.int32)

  mask = ranks_with(counts > 0)
  suit_counts = jnp.sum(suits[..., :, None] == jnp.arange(4, dtype=jnp.int32), axis=-2,
                        dtype=jnp.int32)  # [..., 4]
  flush_suit = jnp.argmax(suit_counts, axis=-1)
  has_flush = jnp.max(suit_counts, axis=-1) >= 5
  flush_mask = jnp.sum(jnp.where(suits == flush_suit[..., None], bits, 0), axis=-1,
                       dtype=jnp.int32)

  sf_top = jnp.where(has_flush, _straight_top(flush_mask), -1)
  st_top = _straight_top(mask)
  quad = _top_bit(ranks_with(counts == 4))
  trip = _top_bit(ranks_with(counts >= 3))
  full_pair = _top_bit(ranks_with(counts >= 2) & ~_bit(trip))
  pairs = ranks_with(counts == 2)
  pair1 = _top_bit(pairs)
  pair2 = _top_bit(pairs & ~_bit(pair1))

  def value(category, code):
    return jnp.int32(category << 20) | code

  candidates = [  # highest category first; the first that holds is the hand
      (sf_top >= 0, value(8, sf_top << 16)),
      (quad >= 0, value(7, (quad << 16) | (_top_ranks(mask & ~_bit(quad), 1) << 12))),
      ((trip >= 0) & (full_pair >= 0), value(6, (trip << 16) | (full_pair << 12))),
      (has_flush, value(5, _top_ranks(flush_mask, 5))),
      (st_top >= 0, value(4, st_top << 16)),
      (trip >= 0, value(3, (trip << 16) | (_top_ranks(mask & ~_bit(trip), 2) << 8))),
      (pair2 >= 0, value(2, (pair1 << 16) | (pair2 << 12)
                         | (_top_ranks(mask & ~_bit(pair1) & ~_bit(pair2), 1) << 8))),
      (pair1 >= 0, value(1, (pair1 << 16) | (_top_ranks(mask & ~_bit(pair1), 3) << 4))),
  ]
  out = value(0, _top_ranks(mask, 5))
  for holds, v in reversed(candidates):
    out = jnp.where(holds, v, out)
  return out.astype(jnp.int32)


def category(value):
  """The category index (into :data:`CATEGORIES`) of :func:`hand_rank` values."""
  return jnp.asarray(value) >> 20


def card_string(card: int) -> str:
  """``"As"`` for card id 51 (OpenSpiel's card names)."""
  return RANKS[card // 4] + SUITS[card % 4]
