"""The layers a newcomer should see, enforced.

Core (stdlib only) → codec and environments (numpy, gymnasium, pettingzoo) → scripted
agents (numpy, numba) → learning (torch) → evaluation → integrations (other libraries'
trainers and Ray, each module importing its own library). A module's top-level imports may only
reach its own layer and the layers before it (a lazy import inside a function, such as
loading a ``ckpt:`` agent, is how a lower layer uses a higher one on demand). Importing a
lower layer never loads a higher layer's libraries, and no code outside
``mt_env/rules.py`` reads a ``RoundState``'s private state.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from mt_env.rules import RoundState

ROOT = Path(__file__).resolve().parents[1]
STDLIB = set(sys.stdlib_module_names) | {"__future__"}

CORE = {f"mt_env.{m}" for m in ("tiles", "config", "rules", "match", "actions", "rewards")}
CORE.add("mt_env")
CODEC_ENV = {
    f"mt_env.{m}" for m in ("observation", "state", "render", "aec", "gym_env", "wrappers")
}
# Pillow draws render_mode="rgb_array" pictures: only mt_env.picture imports it, and the
# environments import mt_env.picture only when a picture is asked for.
PICTURE = {"mt_env.picture"}
SCRIPTED = {
    f"mt_env.agents.{m}"
    for m in ("base", "baselines", "chains", "features", "longest_train", "search")
}
SCRIPTED.add("mt_env.agents")

# layer -> (third-party libraries allowed at top level, project module prefixes allowed)
LAYERS = {
    "core": (set(), CORE),
    "codec_env": ({"numpy", "gymnasium", "pettingzoo"}, CORE | CODEC_ENV),
    "picture": ({"numpy", "PIL"}, CORE | CODEC_ENV | PICTURE),
    "scripted": ({"numpy", "numba"}, CORE | CODEC_ENV | SCRIPTED),
    "learning": ({"numpy", "torch"}, CORE | CODEC_ENV | SCRIPTED | {"mt_env.agents.ppo"}),
    "evaluation": ({"numpy"}, CORE | CODEC_ENV | SCRIPTED | {"mt_env.agents.evaluation"}),
    "integrations": (
        {"numpy", "gymnasium", "pettingzoo", "torch", "sb3_contrib", "stable_baselines3",
         "ray", "tianshou", "torchrl", "tensordict"},
        CORE | CODEC_ENV | SCRIPTED | {"mt_env.agents.ppo", "mt_env.agents.evaluation",
                                       "mt_env.integrations"},
    ),
}


def layer_of(module: str) -> str:
    if module in CORE:
        return "core"
    if module in CODEC_ENV:
        return "codec_env"
    if module in PICTURE:
        return "picture"
    if module in SCRIPTED:
        return "scripted"
    if module == "mt_env.agents.ppo" or module.startswith("mt_env.agents.ppo."):
        return "learning"
    if module == "mt_env.agents.evaluation" or module.startswith("mt_env.agents.evaluation."):
        return "evaluation"
    if module == "mt_env.integrations" or module.startswith("mt_env.integrations."):
        return "integrations"
    raise AssertionError(f"{module} belongs to no layer: add it to tests/test_layers.py")


def project_modules() -> dict[str, Path]:
    out = {}
    # the folder agents/ is installed as mt_env.agents (pyproject's package-dir)
    for folder, package in (("mt_env", ("mt_env",)), ("agents", ("mt_env", "agents"))):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = package + (parts[:-1] if parts[-1] == "__init__" else parts)
            out[".".join(parts)] = path
    return out


def top_level_imports(path: Path, module: str) -> list[str]:
    """Absolute names of the modules ``path`` imports outside any function body."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    for node in tree.body:  # module level only: imports inside functions are lazy
        nodes = [node]
        if isinstance(node, ast.If | ast.Try):  # e.g. TYPE_CHECKING or optional imports
            nodes = list(ast.walk(node))
        for n in nodes:
            if isinstance(n, ast.Import):
                names += [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    base = package.split(".")
                    base = base[: len(base) - (n.level - 1)]
                    prefix = ".".join(base)
                    target = f"{prefix}.{n.module}" if n.module else prefix
                    if n.module is None:  # from . import x: x may be a submodule
                        names += [f"{target}.{a.name}" for a in n.names]
                        continue
                    names.append(target)
                else:
                    names.append(n.module)
    return names


def allowed(importer_layer: str, name: str, modules: dict[str, Path]) -> bool:
    libs, project = LAYERS[importer_layer]
    root = name.split(".")[0]
    if root in STDLIB:
        return True
    if root == "mt_env":
        target = name if name in modules else name.rpartition(".")[0]  # from pkg import obj
        # a package's __init__ is its own module; agents.ppo and agents.evaluation are layers
        layers = ("mt_env.agents.ppo", "mt_env.agents.evaluation", "mt_env.integrations")
        return any(target == p or (p in layers and target.startswith(p + ".")) for p in project)
    return root in libs


def test_every_module_imports_only_its_own_and_lower_layers():
    modules = project_modules()
    assert "mt_env.rules" in modules and "mt_env.agents.search" in modules
    bad = []
    for module, path in modules.items():
        layer = layer_of(module)
        for name in top_level_imports(path, module):
            if not allowed(layer, name, modules):
                bad.append(f"{module} ({layer}) imports {name}")
    assert not bad, "\n".join(bad)


def test_the_layer_check_catches_a_wrong_edge():
    modules = project_modules()
    assert not allowed("core", "numpy", modules)
    assert not allowed("core", "mt_env.observation", modules)
    assert not allowed("scripted", "torch", modules)
    assert not allowed("scripted", "mt_env.agents.ppo.policy", modules)
    assert not allowed("learning", "mt_env.agents.evaluation.tournament", modules)
    assert allowed("learning", "mt_env.agents.search", modules)
    assert allowed("core", "mt_env.rules", modules)


@pytest.mark.parametrize(
    ("statement", "forbidden"),
    [
        ("import mt_env.rules", ("gymnasium", "pettingzoo", "torch", "numpy")),
        ("import mt_env", ("gymnasium", "pettingzoo", "torch", "numpy")),
        ("import mt_env.aec, mt_env.gym_env, mt_env.wrappers", ("torch", "PIL")),
        ("import mt_env.agents, mt_env.agents.search", ("torch", "gymnasium", "pettingzoo")),
        ("import mt_env.agents.evaluation.tournament", ("torch",)),
    ],
)
def test_importing_a_lower_layer_loads_no_higher_library(statement, forbidden):
    code = f"{statement}; import sys; print([m for m in {forbidden!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_lazy_environment_names_still_import():
    import mt_env

    assert mt_env.raw_env.__module__ == "mt_env.aec"
    assert mt_env.MexicanTrainGymEnv.__module__ == "mt_env.gym_env"
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        mt_env.nonexistent  # noqa: B018


PRIVATE = {s for s in RoundState.__slots__ if s.startswith("_")}


def test_no_code_outside_the_rules_module_reads_round_state_private_state():
    """RoundState's private slots are read only by mt_env/rules.py (through ``self`` or
    a state it builds); everyone else, tests included, uses the read-only view."""
    folders = ("mt_env", "agents", "tests", "benchmarks", "examples")
    paths = [p for d in folders for p in (ROOT / d).rglob("*.py")]
    paths.append(ROOT / "train.py")
    bad = []
    for path in paths:
        if path == ROOT / "mt_env" / "rules.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in PRIVATE:
                if not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno} reads .{node.attr}")
    assert not bad, "\n".join(bad)
