"""Search over subgames of a compiled game: depth-limited solving and re-solving.

* :mod:`jaxgt.search.subgame`: subgames cut out of the public tree at public
  states, with root ranges entering as terminal weights.
* :mod:`jaxgt.search.leaf`: leaf evaluators and the chunked solve that
  queries them (depth-limited solving, ``004``).
* :mod:`jaxgt.search.resolving`: the safe re-solving gadget and the
  summaries continual re-solving carries between searches (``003``).

``search`` builds on :mod:`jaxgt.core` and :mod:`jaxgt.solvers`; agents that
use it live in :mod:`jaxgt.agents`.
"""
