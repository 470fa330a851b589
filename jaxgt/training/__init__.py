"""Student of Games' training process (Schmid et al., *Student of Games*, 2023, "Training
Process", Algorithm 2): device buffers (:mod:`jaxgt.training.buffers`), the learner
(:mod:`jaxgt.training.learner`) and orbax checkpoints (:mod:`jaxgt.training.checkpoint`).

Only ``jaxgt.cli`` imports ``training`` (``tests/test_architecture.py``), so the agent that
loads a checkpoint (``sog(...)``) lives here; importing this package registers its kind in
the catalogue of agent kinds (:mod:`jaxgt.training.agent_kind`). Other submodules are imported
explicitly (``from jaxgt.training import learner``).
"""

from jaxgt.training import agent_kind  # noqa: F401  registers the agent kind ``sog``
