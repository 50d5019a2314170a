"""How the project installs, checked against pyproject.toml and the installed metadata.

One version everywhere; the presets ship with the trainer and resolve through its own
loader; the base install is the environment alone (no torch) and torch's range admits
current releases; nothing generic (``train``, ``agents``, ``configs`` …) lands at the top
level of site-packages. No network, no build: a few file reads and imports.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import importlib.util
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

import mt_env

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
GENERIC = {"train", "agents", "configs", "tests", "benchmarks", "scripts", "docs"}


def requirements(group: str | None = None) -> list[Requirement]:
    """The base dependencies (``group=None``) or one optional group's, parsed."""
    project = PROJECT["project"]
    specs = project["dependencies"] if group is None else project["optional-dependencies"][group]
    return [Requirement(s) for s in specs]


def installed() -> importlib.metadata.Distribution:
    """The installed distribution (site-packages), not the build's mt_env.egg-info in ROOT."""
    dists = [d for d in importlib.metadata.distributions(name="mt_env")
             if Path(d.locate_file("")).resolve() != ROOT]
    assert dists, "mt_env is not installed: bash scripts/setup.sh"
    return dists[0]


def test_one_version_everywhere():
    version = PROJECT["project"]["version"]
    assert installed().version == mt_env.__version__ == version
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(rf"^version: {re.escape(version)}$", cff, re.M), "CITATION.cff version"
    assert f"## [{version}]" in (ROOT / "CHANGELOG.md").read_text(), "CHANGELOG.md entry"


def test_presets_resolve_through_the_trainers_loader():
    from mt_env.cli import train  # the trainer under its installed name

    assert train.CONFIG_DIR == importlib.resources.files("mt_env.cli") / "configs"
    shipped = sorted(p.name for p in train.CONFIG_DIR.iterdir() if p.name.endswith(".toml"))
    assert shipped == sorted(p.name for p in (ROOT / "configs").glob("*.toml"))
    assert "quick.toml" in shipped
    for name in shipped:
        train.load_preset(name.removesuffix(".toml")).validate()


def test_torch_is_optional_and_unbounded():
    base = {r.name for r in requirements()}
    assert "torch" not in base
    extras = PROJECT["project"]["optional-dependencies"]
    extra_names = {r.name for group in extras for r in requirements(group)} - {"mt_env"}
    assert not base & extra_names, "an extra repeats a base dependency"

    torch = [r for group in extras for r in requirements(group) if r.name == "torch"]
    assert torch, "torch belongs to an extra"
    for req in torch:
        bounds = [s for s in req.specifier if s.operator in ("<", "<=", "==", "===", "~=")]
        assert not bounds, f"{req}: torch is bounded above; current releases would be refused"
        assert req.specifier.contains(Version("99.0"))
    try:  # the torch this environment has must satisfy the range too
        installed = Version(importlib.metadata.version("torch"))
    except importlib.metadata.PackageNotFoundError:
        return
    assert all(req.specifier.contains(installed, prereleases=True) for req in torch)


def test_nothing_generic_at_the_top_level():
    setuptools = PROJECT["tool"]["setuptools"]
    assert not setuptools.get("py-modules"), "a top-level module would be installed"
    assert all(p == "mt_env" or p.startswith("mt_env.") for p in setuptools["packages"])
    assert all(k.startswith("mt_env") for k in setuptools.get("package-dir", {}))
    dist = installed()
    assert (dist.read_text("top_level.txt") or "mt_env").split() == ["mt_env"]
    top_level = {Path(f).parts[0].removesuffix(".py") for f in dist.files or ()}
    assert not top_level & GENERIC, sorted(top_level)


def test_console_scripts_point_into_the_package():
    scripts = {ep.name: ep for ep in installed().entry_points if ep.group == "console_scripts"}
    assert set(scripts) >= {"mt-train", "mt-tournament"}
    for ep in scripts.values():
        assert ep.module.startswith("mt_env."), ep
        assert importlib.util.find_spec(ep.module) is not None, ep


def test_typed_marker_ships():
    assert "py.typed" in PROJECT["tool"]["setuptools"]["package-data"]["mt_env"]
    assert importlib.resources.files("mt_env").joinpath("py.typed").is_file()
