"""Search on the device public tree: depth-limited solving, re-solving and Growing-Tree CFR.

* :mod:`jaxgt.search.device_tree`: a fixed-capacity public tree on the
  device, grown by expansions (nodes are public states), read from an enumerated
  game's tables (``source_from_game``).
* :mod:`jaxgt.search.rules_source`: the same nodes computed from a device game's
  rules at expansion (games whose public states factor; ``rules_source``), so
  GT-CFR searches games too large to enumerate.
* :mod:`jaxgt.search.history_cfr`: the history form of a (partial) tree:
  reaches and values over history slots, the tree view on which GT-CFR runs
  the package's one CFR iteration (:mod:`jaxgt.solvers.cfr_iteration`).
* :mod:`jaxgt.search.evaluator`: the leaf-evaluator protocol (``LeafInput``,
  ``Evaluator``) with the exact, continuation (multi-valued), callable and blended
  evaluators; the network adapter is :mod:`jaxgt.nets.gtcfr_evaluator`.
* :mod:`jaxgt.search.gadget`: the safe re-solving gadget at a search's root.
* :mod:`jaxgt.search.regret_phase`: the tree's history form as a view of the one CFR
  iteration (GT-CFR's regret phase).
* :mod:`jaxgt.search.gtcfr`: Growing-Tree CFR (Schmid et al., "Student of
  Games", 2023, Algorithm 1): regret and expansion phases, batched searches,
  and the regret phase alone on a given tree (``solve_tree``); its configuration is
  :mod:`jaxgt.search.gtcfr_config`, its state, result and phases
  :mod:`jaxgt.search.gtcfr_program`.
* :mod:`jaxgt.search.subgame`: depth-limited solving and safe re-solving of
  a subgame (its device tree, re-solving summaries, policies in the full
  game's arrays).

``search`` builds on :mod:`jaxgt.core` and :mod:`jaxgt.solvers`; agents that
use it live in :mod:`jaxgt.agents`.
"""
