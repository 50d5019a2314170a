#!/usr/bin/env bash
# Test the integrations with other libraries, each in a fresh venv of its own:
#   .venv-sb3       sb3-contrib (MaskablePPO)       tests/integrations/test_sb3.py
#   .venv-ray       ray[rllib]: RLlib and --backend ray   tests/integrations/test_ray.py, test_rllib.py
#   .venv-tianshou  tianshou                         tests/integrations/test_tianshou.py
#   .venv-torchrl   torchrl                          tests/integrations/test_torchrl.py
# Each venv is made by scripts/setup.sh (torch's CPU build first, then the project with
# the library's extra), so these libraries never meet in one environment: RLlib pins its
# own gymnasium. Usage: bash scripts/integrations.sh [sb3 ray tianshou torchrl]
# (default: all). A venv that exists is reused; delete it to start fresh.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A EXTRA=([sb3]=sb3 [ray]="rllib,ray" [tianshou]=tianshou [torchrl]=torchrl)
declare -A TESTS=(
    [sb3]=tests/integrations/test_sb3.py
    [ray]="tests/integrations/test_ray.py tests/integrations/test_rllib.py"
    [tianshou]=tests/integrations/test_tianshou.py
    [torchrl]=tests/integrations/test_torchrl.py
)
libs=("$@")
[ ${#libs[@]} -eq 0 ] && libs=(sb3 ray tianshou torchrl)
for lib in "${libs[@]}"; do
    if [ -z "${EXTRA[$lib]+x}" ]; then
        echo "integrations: unknown library '$lib': expected sb3, ray, tianshou or torchrl" >&2
        exit 2
    fi
done
for lib in "${libs[@]}"; do
    echo "integrations: $lib"
    VENV=".venv-$lib" EXTRAS="train,test,${EXTRA[$lib]}" bash scripts/setup.sh
    # shellcheck disable=SC2086
    ".venv-$lib/bin/python" -m pytest ${TESTS[$lib]}
done
