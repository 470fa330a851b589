"""Networks over public belief states: fixed-size encodings (:mod:`jaxgt.nets.encoding`), the
counterfactual value-and-policy network with its fit (:mod:`jaxgt.nets.cvpn`), and the network
as the search's leaf evaluator (:mod:`jaxgt.nets.gtcfr_evaluator`)."""

from jaxgt.nets.cvpn import (CVPN, CVPNOutput, CVPNTargets, continuation_cfvs, fit, init, losses,
                             network_cfvs)
from jaxgt.nets.encoding import (PBS, PBSEncoding, build_encoding, exact_cfvs, features,
                                 gather_ranges, history_utilities, make_pbs, masks, pad_ranges,
                                 scatter, scatter_policy, to_game_scale)
from jaxgt.nets.gtcfr_evaluator import (SlotMap, cvpn_evaluator, pbs_evaluator, query_pbs,
                                        search_targets, slot_map)
