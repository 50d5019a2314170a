"""Checkpoint files, both directions: what the trainer writes, what agents and ``--resume`` read.

A checkpoint is a ``torch.save`` of a dict, written atomically (temp file in the same
folder, fsync, ``os.replace``: a crash leaves the old file or the new one). Its weights must
be finite (NaN or infinite weights are refused when saving and when loading), and it
carries a SHA-256 of its content, verified at every load:

| key | what |
|---|---|
| ``format``, ``format_version`` | ``"mt_env-ppo"``, :data:`CHECKPOINT_VERSION` |
| ``sha256`` | :func:`content_digest` of every other entry (format 2; format-1 files, written before it existed, load unverified) |
| ``observation_version``, ``obs_size``, ``num_actions``, ``features`` | the layout the weights expect (:func:`mt_env.agents.features.layout`) |
| ``rules`` | the :class:`~mt_env.config.RulesConfig` as a dict |
| ``train_config`` | the full trainer configuration |
| ``model`` | policy weights; ``hidden_sizes`` its trunk's shape (the pair head's width is its ``pair_out.weight``'s: :func:`pair_width`) |
| ``global_step``, ``iteration``, ``env_steps`` | how far training got |
| ``critic``, ``optimizer``, ``best_eval``, ``pool``, ``pretrained``, ``torch_rng`` | trainer state for ``--resume`` (absent from policy-only exports) |
| ``elapsed`` | seconds of training this checkpoint holds (counted against the time limit on ``--resume``; absent from files written before it existed: 0) |

The trainer writes ``checkpoint.pt`` (:func:`trainer_checkpoint`, everything; :func:`detached`
keeps a copy of the last good one) and the policy-only exports ``best.pt`` / ``final.pt``
(:func:`policy_export`); :func:`remove_stale_temp_files` deletes the temp files of writes a
kill interrupted. :func:`load_checkpoint`
checks the file's structure (every key, its type, the weights' shapes against
``hidden_sizes``), the checksum, and every layout key against the rules configuration it
is used with, and raises :class:`CheckpointError` naming what is wrong; a truncated or
corrupt file raises it too.

Observation layout 1 (before the ``voids`` piece and the pair block's fourth column) is
read too: :func:`widen_layout_1` gives such a policy zero weights on the inputs layout 2
added, so it computes exactly what it computed before, from layout-2 inputs. Only policy
weights widen: a layout-1 *trainer* checkpoint (optimizer, critic, pool) cannot be
resumed, and the error says to start a stage from it with ``--init-policy`` instead.
:func:`resume` puts a trainer checkpoint's state back into a policy, critic and optimizer;
:func:`load_policy_weights` puts only a file's policy weights into a new network (a second
training stage, ``train.py --init-policy``), a trunk as deep and at least as wide: a wider one
grows from the file without changing its outputs.
The network itself is built from a loaded dict by :func:`mt_env.agents.ppo.policy.build_policy`.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

from mt_env.agents.features import layout
from mt_env.config import RulesConfig
from mt_env.observation import OBSERVATION_VERSION

CHECKPOINT_FORMAT = "mt_env-ppo"
CHECKPOINT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: before the checksum
MAX_HIDDEN = 4096  # a wider layer is no checkpoint of ours: refuse before allocating it
PAIR_HIDDEN = 64
"""The default width of the pair head's hidden layer (feature set ``"pairs"``)."""
POLICY_KEYS = (
    "format", "format_version", "observation_version", "obs_size", "num_actions",
    "features", "hidden_sizes", "rules", "train_config", "model", "global_step",
    "iteration", "env_steps",
)
"""The keys of a policy-only export: what an agent needs, no trainer state."""
TRAINING_NETWORKS = ("critic", "belief")
"""The state dicts a trainer checkpoint holds beside the policy's ``model`` (None where the run
has no privileged critic or belief head); policy exports leave them out. Every weight check
covers them."""


def _read_umask() -> int:
    mask = os.umask(0o022)  # os.umask only reads by setting: set a safe value meanwhile
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # once, at import: changing it later would race other threads' files


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: corrupt, truncated, or built for another layout/rules."""


# ------------------------------------------------------------------------------ files
def save_checkpoint(path: str | os.PathLike, payload: dict) -> None:
    """Write ``payload`` to ``path`` atomically: a crash leaves the old file or the new one."""
    path = Path(path)
    for key in ("model", *TRAINING_NETWORKS):
        _check_finite(payload.get(key), key, path)
    payload = {k: v for k, v in payload.items() if k != "sha256"}
    payload["sha256"] = content_digest(payload)
    buf = io.BytesIO()
    torch.save(payload, buf)
    write_atomic(path, buf.getvalue())


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder (made if missing),
    fsync and ``os.replace``: a crash leaves the old file or the new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide it from the group
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


TEMP_GLOB = ".*.pt.*.tmp"
"""The temp files :func:`save_checkpoint` writes before its rename (``.checkpoint.pt.XXXX.tmp``)."""


def remove_stale_temp_files(folder: str | os.PathLike) -> list[Path]:
    """Delete the temp files in ``folder`` that checkpoint writes killed before their rename
    left behind (:data:`TEMP_GLOB`); return them. Call it when no other process writes there."""
    removed = []
    for tmp in sorted(Path(folder).glob(TEMP_GLOB)):
        if tmp.is_file():
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def load_checkpoint(path: str | os.PathLike, config: RulesConfig | None = None) -> dict:
    """Read and check a checkpoint. With ``config``, its rules and layout must match exactly."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path}: no such file")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds for truncated/corrupt archives
        raise CheckpointError(
            f"checkpoint {path} is corrupt or truncated ({type(err).__name__}: {err}); "
            f"expected a file written by train.py"
        ) from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"checkpoint {path} is not an mt_env PPO checkpoint")
    if data.get("format_version") not in READABLE_VERSIONS:
        raise CheckpointError(
            f"checkpoint {path} has format version {data.get('format_version')!r}; "
            f"this code reads versions {READABLE_VERSIONS}"
        )
    if data["format_version"] >= 2:
        stored = data.get("sha256")
        body = {k: v for k, v in data.items() if k != "sha256"}
        if not isinstance(stored, str) or stored != content_digest(body):
            raise CheckpointError(
                f"checkpoint {path}: its content does not match its SHA-256 checksum; the "
                f"file is corrupt (expected a file written by train.py and not changed since)"
            )
    else:
        warnings.warn(
            f"checkpoint {path} is format 1 (no checksum): its content cannot be verified; "
            f"re-save it with mt_env.agents.ppo.checkpoint.save_checkpoint",
            stacklevel=2,
        )
    check_structure(data, path)
    if data.get("observation_version") == 1 and OBSERVATION_VERSION == 2:
        data = widen_layout_1(data, path)
    if data.get("observation_version") != OBSERVATION_VERSION:
        raise CheckpointError(
            f"checkpoint {path} was trained on observation layout version "
            f"{data.get('observation_version')}; this code builds version {OBSERVATION_VERSION}"
        )
    if config is not None:
        check_layout(data, config, path)
    return data


def widen_layout_1(data: dict, where: str | os.PathLike) -> dict:
    """A policy checkpoint of observation layout 1 as one of layout 2 that acts exactly alike.

    Layout 2 appended the ``voids`` piece (``n × (N+1)`` entries) to the observation and a
    fourth column to the ``"pairs"`` features' pair block. The trunk's first layer gets
    zero weights for the new observation entries (they come right after the old
    observation in its input), and the pair head's input layer a zero column: every
    output is what it was. CheckpointError for a trainer checkpoint (its optimizer state
    and critic have the old shapes) or a file whose sizes are not layout 1's."""
    if "optimizer" in data:
        raise CheckpointError(
            f"checkpoint {where} is a trainer checkpoint of observation layout 1; this code "
            f"builds layout {OBSERVATION_VERSION} and cannot resume it. Start a new stage from "
            f"its policy instead: train.py --init-policy {where} (the policy is widened exactly)"
        )
    rules = RulesConfig.from_dict(data["rules"])
    features = data["features"]
    added = rules.num_seats * (rules.max_pip + 1)
    new_obs = layout(rules, "none")["obs_size"]
    if data["obs_size"] != new_obs - added:
        raise CheckpointError(
            f"checkpoint {where}: obs_size={data['obs_size']}, but observation layout 1 of "
            f"its rules has {new_obs - added} entries"
        )
    model = dict(data["model"])
    first = model["trunk.0.weight"]
    cut = data["obs_size"]
    model["trunk.0.weight"] = torch.cat(
        [first[:, :cut], first.new_zeros(first.shape[0], added), first[:, cut:]], dim=1
    )
    if features == "pairs":
        pair_in = model["pair_in.weight"]
        model["pair_in.weight"] = torch.cat([pair_in, pair_in.new_zeros(pair_in.shape[0], 1)], 1)
    out = {**data, "model": model, "observation_version": 2, "obs_size": new_obs}
    if "sha256" in out:  # the widened content's own checksum, as save_checkpoint would write
        out["sha256"] = content_digest({k: v for k, v in out.items() if k != "sha256"})
    return out


def content_digest(payload: dict) -> str:
    """SHA-256 of a checkpoint dict's content: every key, value, tensor dtype, shape and
    byte, in a fixed order (independent of how the archive was zipped)."""
    h = hashlib.sha256()

    def walk(value) -> None:
        if isinstance(value, torch.Tensor):
            t = value.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        elif isinstance(value, dict):
            h.update(f"D{len(value)}".encode())
            for k in sorted(value, key=repr):
                h.update(repr(k).encode())
                walk(value[k])
        elif isinstance(value, list | tuple):
            h.update(f"L{len(value)}".encode())
            for v in value:
                walk(v)
        else:
            h.update(f"V{type(value).__name__}:{value!r}".encode())

    walk(payload)
    return h.hexdigest()


def _check_finite(weights, key: str, where) -> None:
    if not isinstance(weights, dict):
        return
    for name, t in weights.items():
        if isinstance(t, torch.Tensor) and t.is_floating_point() and not torch.isfinite(t).all():
            raise CheckpointError(
                f"checkpoint {where}: {key}[{name!r}] holds NaN or infinite weights; a "
                f"diverged network is never saved or loaded (expected finite weights)"
            )


_TYPES = {
    "observation_version": int, "obs_size": int, "num_actions": int, "features": str,
    "hidden_sizes": list | tuple, "rules": dict, "train_config": dict, "model": dict,
    "global_step": int, "iteration": int, "env_steps": int,
}
_TRAINER_TYPES = {
    "optimizer": dict, "best_eval": float | int, "pool": list, "pretrained": bool,
    "torch_rng": torch.Tensor,
}
_OPTIONAL_TYPES = {"elapsed": float | int}  # newer than format 2's first files


def pair_width(model: dict) -> int:
    """The width of the pair head's hidden layer in a policy's weights (``model``, a state
    dict): the number of inputs of ``pair_out``; :data:`PAIR_HIDDEN` for a network without
    a pair head (feature sets ``"none"`` and ``"planning"``)."""
    weight = model.get("pair_out.weight")
    return PAIR_HIDDEN if weight is None else int(weight.shape[-1])


def check_structure(data: dict, where: str | os.PathLike) -> None:
    """CheckpointError unless ``data`` has every key of its kind with the right type, finite
    weights, valid rules, and weights whose shapes fit ``hidden_sizes`` (checked before any
    network is built, so a forged width costs nothing)."""
    missing = [k for k in _TYPES if k not in data]
    if missing:
        raise CheckpointError(f"checkpoint {where} lacks the key(s) {missing}")
    trainer = "optimizer" in data
    for key, kind in {**_TYPES, **(_TRAINER_TYPES if trainer else {})}.items():
        if key not in data:
            raise CheckpointError(f"checkpoint {where} has an optimizer but lacks {key!r}")
        if not isinstance(data[key], kind) or isinstance(data[key], bool) and kind is int:
            raise CheckpointError(
                f"checkpoint {where}: {key} is a {type(data[key]).__name__}, expected {kind}"
            )
    for key, kind in _OPTIONAL_TYPES.items():
        value = data.get(key, 0)
        if not isinstance(value, kind) or isinstance(value, bool) or not 0 <= value < math.inf:
            raise CheckpointError(
                f"checkpoint {where}: {key}={value!r}; expected a finite number >= 0"
            )
    hidden = list(data["hidden_sizes"])
    if not hidden or not all(
        isinstance(h, int) and not isinstance(h, bool) and 1 <= h <= MAX_HIDDEN for h in hidden
    ):
        raise CheckpointError(
            f"checkpoint {where}: hidden_sizes={hidden!r}; expected widths in 1..{MAX_HIDDEN}"
        )
    model = data["model"]
    if not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in model.items()):
        raise CheckpointError(f"checkpoint {where}: model must map names to tensors")
    trunk = sorted(
        (int(k.split(".")[1]), v.shape) for k, v in model.items()
        if k.startswith("trunk.") and k.endswith(".weight") and k.split(".")[1].isdigit()
    )
    if [shape[0] for _, shape in trunk] != hidden:
        raise CheckpointError(
            f"checkpoint {where}: hidden_sizes={hidden} but the trunk's weights have widths "
            f"{[shape[0] for _, shape in trunk]}"
        )
    if not 1 <= (pair := pair_width(model)) <= MAX_HIDDEN:
        raise CheckpointError(f"checkpoint {where}: the pair head is {pair} wide; expected 1..{MAX_HIDDEN}")
    _check_finite(model, "model", where)
    if trainer:
        for key in TRAINING_NETWORKS:
            _check_finite(data.get(key), key, where)
    try:
        RulesConfig.from_dict(data["rules"])
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"checkpoint {where}: invalid rules ({err})") from None
    if any(isinstance(data.get(k), float) and not math.isfinite(data[k]) and k != "best_eval"
           for k in data):
        raise CheckpointError(f"checkpoint {where}: a counter is not finite")


def check_layout(data: dict, config: RulesConfig, where: str | os.PathLike) -> None:
    """CheckpointError unless the checkpoint dict ``data`` was trained for ``config``'s
    rules and has the layout they need; the message names each mismatch."""
    trained = RulesConfig.from_dict(data["rules"])
    if trained != config:
        diff = {
            k: (v, getattr(config, k)) for k, v in trained.to_dict().items() if getattr(config, k) != v
        }
        raise CheckpointError(
            f"checkpoint {where} was trained for other rules: "
            + ", ".join(f"{k}={a!r} (asked for {b!r})" for k, (a, b) in diff.items())
        )
    expected = layout(config, data.get("features", "none"))
    for key in ("obs_size", "num_actions"):
        if data.get(key) != expected[key]:
            raise CheckpointError(
                f"checkpoint {where}: {key}={data.get(key)} but these rules need {expected[key]}"
            )


# ------------------------------------------------------------------------------ the trainer's side
@dataclass
class TrainerState:
    """The trainer's counters and opponent pool: what ``--resume`` restores besides weights."""

    global_step: int = 0
    """learner decisions trained on"""
    iteration: int = 0
    """PPO updates done"""
    env_steps: int = 0
    """moves of every seat played (learner, opponents, forced moves, demonstrations)"""
    best_eval: float = float("-inf")
    """best periodic evaluation win rate so far (best.pt holds that policy)"""
    pool: list[dict] = field(default_factory=list)
    """opponent-pool snapshots (policy state dicts), oldest first"""
    pretrained: bool = False
    """behaviour cloning is done (a resumed run does not clone again)"""
    elapsed: float = 0.0
    """seconds of training so far (cloning included), counted against the time limit"""


def trainer_checkpoint(
    train_config: dict,
    rules: RulesConfig,
    policy: torch.nn.Module,
    critic: torch.nn.Module | None,
    optimizer: torch.optim.Optimizer,
    state: TrainerState,
    belief: torch.nn.Module | None = None,
) -> dict:
    """Everything ``--resume`` needs: the policy, its layout and rules, the privileged
    critic and the belief head (or None), the optimizer, the counters and pool, and torch's
    RNG state."""
    features = train_config["features"]
    lay = layout(rules, features)
    return {
        "format": CHECKPOINT_FORMAT,
        "format_version": CHECKPOINT_VERSION,
        **{k: lay[k] for k in ("observation_version", "obs_size", "num_actions", "features")},
        "hidden_sizes": list(train_config["hidden_sizes"]),
        "rules": rules.to_dict(),
        "train_config": train_config,
        "model": policy.state_dict(),
        "critic": critic.state_dict() if critic is not None else None,
        "belief": belief.state_dict() if belief is not None else None,
        "optimizer": optimizer.state_dict(),
        "global_step": state.global_step,
        "iteration": state.iteration,
        "env_steps": state.env_steps,
        "best_eval": state.best_eval,
        "pool": state.pool,
        "pretrained": state.pretrained,
        "elapsed": float(state.elapsed),
        "torch_rng": torch.get_rng_state(),
    }


def detached(payload: dict) -> dict:
    """A copy of a :func:`trainer_checkpoint` dict that later training leaves unchanged
    (weights and optimizer state copied; the pool's snapshots are never changed in place):
    the last good state, saved when training fails or stops. CheckpointError if its weights
    are not finite: a diverged state is never kept."""
    for key in ("model", *TRAINING_NETWORKS):
        _check_finite(payload.get(key), key, f"of update {payload.get('iteration')}")

    def clone(value):
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, dict):
            return {k: clone(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clone(v) for v in value]
        return value

    return {k: list(v) if k == "pool" else clone(v) for k, v in payload.items()}


def policy_export(payload: dict) -> dict:
    """A checkpoint holding what an agent needs (weights, layout, rules, config), no trainer state."""
    return {k: payload[k] for k in POLICY_KEYS}


def resumable_config(path: str | os.PathLike) -> dict:
    """The trainer configuration of a checkpoint that ``--resume`` can continue."""
    data = load_checkpoint(path)
    if "optimizer" not in data:
        raise CheckpointError(f"{path} is a policy-only export: it cannot be resumed")
    return data["train_config"]


def resume(
    path: str | os.PathLike,
    rules: RulesConfig,
    policy: torch.nn.Module,
    critic: torch.nn.Module | None,
    optimizer: torch.optim.Optimizer,
    belief: torch.nn.Module | None = None,
) -> TrainerState:
    """Load a trainer checkpoint's weights into ``policy``, ``critic``, ``belief`` and
    ``optimizer``, restore torch's RNG, and return its counters and pool. The checkpoint must
    have been trained with the same kind of critic (``critic`` None = the policy's own value
    head) and with a belief head exactly when ``belief`` is given."""
    data = load_checkpoint(path, rules)
    policy.load_state_dict(data["model"])
    if (data.get("critic") is None) != (critic is None):
        trained_with = "observation" if data.get("critic") is None else "privileged"
        asked = "observation" if critic is None else "privileged"
        raise CheckpointError(
            f"checkpoint {path} was trained with critic={trained_with!r}, not "
            f"{asked!r}: resume it with --critic {trained_with}"
        )
    if (data.get("belief") is None) != (belief is None):
        fix = "--belief-coef 0" if data.get("belief") is None else "a --belief-coef above 0"
        raise CheckpointError(
            f"checkpoint {path} was trained {'without' if belief else 'with'} a belief head: "
            f"resume it with {fix}"
        )
    if critic is not None:
        critic.load_state_dict(data["critic"])
    if belief is not None:
        belief.load_state_dict(data["belief"])
    optimizer.load_state_dict(data["optimizer"])
    torch.set_rng_state(data["torch_rng"])
    return TrainerState(
        global_step=data["global_step"],
        iteration=data["iteration"],
        env_steps=data["env_steps"],
        best_eval=data["best_eval"],
        pool=list(data["pool"]),
        pretrained=data.get("pretrained", False),
        elapsed=float(data.get("elapsed", 0.0)),
    )


def load_policy_weights(
    path: str | os.PathLike,
    rules: RulesConfig,
    policy: torch.nn.Module,
    features: str,
    hidden_sizes: tuple[int, ...],
) -> dict:
    """Load the policy weights (value head included) of any checkpoint of ours, a policy-only
    export or a trainer checkpoint, into ``policy``, built for ``rules``, ``features`` and
    ``hidden_sizes``. The file's rules and features must match (:class:`CheckpointError`
    names the one that differs); its trunk must have as many layers, each at most as wide,
    and its pair head must be at most as wide as ``policy``'s.

    A wider trunk or pair head is grown from the file without changing what the network
    computes (as in Net2WiderNet): each weight's old block is copied, the new units keep
    ``policy``'s fresh incoming weights, and every weight that reads a new unit reads it
    with 0, so logits and values are the file's until training moves them. Returns the
    loaded dict."""
    data = load_checkpoint(path, rules)
    if data["features"] != features:
        raise CheckpointError(f"{path} was trained with features={data['features']!r}, not "
                              f"{features!r}: start from it with --features {data['features']}")
    old, new = tuple(data["hidden_sizes"]), tuple(hidden_sizes)
    if len(old) != len(new) or any(o > w for o, w in zip(old, new, strict=True)):
        sizes = " ".join(str(h) for h in old)
        raise CheckpointError(f"{path} has hidden_sizes={list(old)}, not {list(new)}: start from "
                              f"it with --hidden-sizes {sizes}, or with as many layers each at "
                              f"least as wide")
    old_pair, new_pair = pair_width(data["model"]), pair_width(policy.state_dict())
    if old_pair > new_pair:
        raise CheckpointError(f"{path} has a pair head {old_pair} wide, not {new_pair}: start from it "
                              f"with --pair-hidden {old_pair} or wider")
    if old == new and old_pair == new_pair:
        policy.load_state_dict(data["model"])
        return data
    grown = policy.state_dict()
    for name, weight in data["model"].items():
        target = grown[name]
        block = tuple(slice(0, n) for n in weight.shape)
        if target.dim() == 2:  # a Linear weight (out, in): new input columns read 0
            target[:, weight.shape[1]:] = 0
        target[block] = weight
    policy.load_state_dict(grown)
    return data
