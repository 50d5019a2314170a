"""Adapters for other libraries' trainers, and Ray for scale-out.

Each module imports its library at the top, so import only the one you use; the library
comes with the project's extra of the same name (``pip install 'mt_env[sb3]'``).

| module | library | what it adds |
|---|---|---|
| :mod:`mt_env.integrations.sb3` | sb3-contrib | MaskablePPO on the Gymnasium env; ``agent`` for tournaments |
| :mod:`mt_env.integrations.rllib` | ray[rllib] | a ``MultiAgentEnv`` with ``observations``/``action_mask`` dicts; action-masking PPO |
| :mod:`mt_env.integrations.tianshou` | tianshou | the PettingZoo env as Tianshou expects it |
| :mod:`mt_env.integrations.torchrl` | torchrl | the env as a TorchRL ``EnvBase`` with an action mask |
| :mod:`mt_env.integrations.ray` | ray | ``--backend ray`` for tournaments and rollout collection |

A model trained with any of them plays in our tournaments and terminal games through a
``py:`` agent spec (:func:`mt_env.agents.make_agent`), e.g.
``mt-tournament --agents py:mt_env.integrations.sb3:agent:model.zip longest-train``.
"""
