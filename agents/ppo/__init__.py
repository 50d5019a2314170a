"""The learning code: everything that imports torch, in the order the layers build on each other.

| module | what |
|---|---|
| :mod:`mt_env.agents.ppo.checkpoint` | checkpoint files, both directions: save/load, layout checks, trainer state, policy exports |
| :mod:`mt_env.agents.ppo.policy` | the networks (:class:`PolicyNet`, :class:`PrivilegedCritic`, the training-only :class:`BeliefHead`), :class:`PPOAgent` and the policy-guided :class:`PolicySearchAgent` |
| :mod:`mt_env.agents.ppo.rollout` | self-play collectors: per-seat streams, reward credit, GAE, worker processes |
| :mod:`mt_env.agents.ppo.cloning` | behaviour cloning of a scripted teacher before PPO |
| :mod:`mt_env.agents.ppo.runs` | the trainer's options checks, run folder, log trimming, signals, good-state keeping |

The policy's input features are :mod:`mt_env.agents.features` (numpy, no torch, so any
library can use them). The trainer (``train.py``) puts them together; ``make_agent("ckpt:PATH", config)`` loads a
checkpoint as a :class:`PPOAgent`.
"""

from mt_env.agents.features import (
    FEATURE_SETS,
    Featurizer,
    layout,
    make_featurizer,
    pair_layout,
)
from mt_env.agents.ppo.checkpoint import (
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    CheckpointError,
    TrainerState,
    load_checkpoint,
    policy_export,
    resumable_config,
    resume,
    save_checkpoint,
    trainer_checkpoint,
)
from mt_env.agents.ppo.policy import (
    BeliefHead,
    PolicyNet,
    PolicySearchAgent,
    PPOAgent,
    PrivilegedCritic,
    build_policy,
    make_belief_head,
    make_critic,
    make_policy,
    privileged_features,
    privileged_size,
    seed_critic,
)
from mt_env.agents.ppo.rollout import (
    Collector,
    CollectorProcess,
    Collectors,
    RolloutSpec,
    parse_opponent_mix,
)

__all__ = [
    "BeliefHead",
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_VERSION",
    "FEATURE_SETS",
    "CheckpointError",
    "Collector",
    "CollectorProcess",
    "Collectors",
    "Featurizer",
    "PPOAgent",
    "PolicySearchAgent",
    "PolicyNet",
    "PrivilegedCritic",
    "RolloutSpec",
    "TrainerState",
    "build_policy",
    "layout",
    "load_checkpoint",
    "make_belief_head",
    "make_critic",
    "make_featurizer",
    "make_policy",
    "pair_layout",
    "parse_opponent_mix",
    "policy_export",
    "privileged_features",
    "privileged_size",
    "resumable_config",
    "resume",
    "save_checkpoint",
    "seed_critic",
    "trainer_checkpoint",
]
