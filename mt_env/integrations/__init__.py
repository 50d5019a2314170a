"""Adapters for other libraries' trainers, and Ray for scale-out.

Each module imports its library at the top, so import only the one you use; the library
comes with the project's extra of the same name (``pip install 'mt_env[sb3]'``).

| module | library | what it adds |
|---|---|---|
| :mod:`mt_env.integrations.sb3` | sb3-contrib | the Gymnasium env for ``MaskablePPO`` (``make_env``); ``agent`` for tournaments |
| :mod:`mt_env.integrations.rllib` | ray[rllib] | a turn-based ``MultiAgentEnv`` with ``observations``/``action_mask`` dicts; action-masking self-play PPO (``ppo_config``); ``agent`` for tournaments |
| :mod:`mt_env.integrations.tianshou` | tianshou | the Gymnasium env with Tianshou's ``obs``/``mask`` keys; masked DQN; ``agent`` for tournaments (the raw PettingZoo env works as is with ``tianshou.env.PettingZooEnv``) |
| :mod:`mt_env.integrations.torchrl` | torchrl | the Gymnasium env as a TorchRL env (``GymWrapper`` + ``ActionMask``), a ``MaskedCategorical`` actor; ``agent`` for tournaments |
| :mod:`mt_env.integrations.ray` | ray | ``backend="ray"``: tournaments (``mt-tournament --backend ray``) and the trainer's rollout collection (``train.py --backend ray``) on a Ray cluster, same results as local |

A model trained with any of them plays in our tournaments and terminal games through a
``py:`` agent spec (:func:`mt_env.agents.make_agent`), e.g.
``mt-tournament --agents py:mt_env.integrations.sb3:agent:model.zip longest-train``.
"""
