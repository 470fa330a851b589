"""Networks over public belief states: encodings and the counterfactual value-and-policy network.

:mod:`jaxgt.nets.encoding` turns public belief states of any compiled game
into fixed-size arrays; :mod:`jaxgt.nets.cvpn` holds the flax CVPN of
Student of Games (``003``), its optax fit, and the adapter that makes it a
depth-limited leaf evaluator (:func:`jaxgt.search.leaf.from_callable`).
"""

from jaxgt.nets.cvpn import (CVPN, CVPNOutput, CVPNTargets, LeafLayout, continuation_cfvs, fit,
                             init, leaf_evaluator, leaf_layout, leaf_pbs, leaf_values, losses,
                             network_cfvs)
from jaxgt.nets.encoding import (PBS, PBSEncoding, build_encoding, exact_cfvs, features,
                                 gather_ranges, history_utilities, make_pbs, masks, pad_ranges,
                                 scatter, scatter_policy, to_game_scale)
