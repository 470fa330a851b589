"""Student of Games' training process (Schmid et al., *Student of Games*, 2023, "Training
Process", Algorithm 2): device buffers (:mod:`jaxgt.training.buffers`), the learner
(:mod:`jaxgt.training.learner`) and orbax checkpoints (:mod:`jaxgt.training.checkpoint`).

Layering: ``training`` may import ``core``, ``games``, ``solvers``, ``search``, ``nets``,
``agents``, ``evaluation``, ``jaxgt.policy`` and ``jaxgt.sharding``; only ``jaxgt.cli``
imports ``training`` (``tests/test_architecture.py``). An agent that loads a checkpoint
(the ``sog(...)`` agent) therefore lives here, and importing this package registers its
kind in the catalogue of agent kinds (:mod:`jaxgt.training.agent_kind`), so ``agents``
never imports ``training``.

Other submodules are imported explicitly (``from jaxgt.training import learner``); this
package imports only the cheap registration, so importing it stays cheap.
"""

from jaxgt.training import agent_kind  # noqa: F401  registers the agent kind ``sog``
