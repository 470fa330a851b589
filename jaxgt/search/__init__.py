"""Search over subgames of a compiled game: depth-limited solving and re-solving.

* :mod:`jaxgt.search.subgame`: subgames cut out of the public tree at public
  states, with root ranges entering as terminal weights.
* :mod:`jaxgt.search.leaf`: leaf evaluators and the chunked solve that
  queries them (depth-limited solving, ``004``).
* :mod:`jaxgt.search.resolving`: the safe re-solving gadget and the
  summaries continual re-solving carries between searches (``003``).
* :mod:`jaxgt.search.device_tree`: a fixed-capacity public tree on the
  device, grown by expansions (nodes are public states).
* :mod:`jaxgt.search.history_cfr`: the history form of a (partial) tree:
  reaches and values over history slots, the tree view on which GT-CFR runs
  the package's one CFR iteration (:mod:`jaxgt.solvers.cfr_iteration`).
* :mod:`jaxgt.search.gtcfr`: Growing-Tree CFR (``003``, Algorithm 1) on the
  device tree: regret and expansion phases, exact and callable evaluators,
  the gadget at the root, batched searches.

``search`` builds on :mod:`jaxgt.core` and :mod:`jaxgt.solvers`; agents that
use it live in :mod:`jaxgt.agents`.
"""
