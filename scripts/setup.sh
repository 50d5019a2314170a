#!/usr/bin/env bash
# Create .venv and install what the tests and the trainer need:
#   1. torch, the CPU build, from PyTorch's own CPU wheel index, as PyTorch documents for
#      CPU-only Linux: pip install torch --index-url https://download.pytorch.org/whl/cpu
#      (pip's configured extra indexes and wheel folders are left out of this one step, so the
#      build that comes is that index's). Where the index cannot be reached, pip gives up within
#      seconds and torch comes from pip's configured index and local wheels instead;
#   2. the project, editable, with its train and test extras.
# Environment:
#   PYTHON               interpreter that creates .venv (default python3)
#   TORCH_INDEX_URL      index torch comes from (default https://download.pytorch.org/whl/cpu;
#                        e.g. https://download.pytorch.org/whl/cu126 for CUDA 12.6); "none" skips
#                        step 1 and torch comes with the train extra from pip's configured index
#   TORCH_FALLBACK       what is installed when that index is unreachable (default torch==2.13.0,
#                        whose CPU wheel these machines keep on disk; elsewhere PyPI's build)
#   TORCH_INDEX_TIMEOUT  seconds pip waits for the index before falling back (default 5)
# A torch already in .venv is kept; to change builds: .venv/bin/python -m pip uninstall torch
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
INDEX=${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}
FALLBACK=${TORCH_FALLBACK:-torch==2.13.0}
TIMEOUT=${TORCH_INDEX_TIMEOUT:-5}

if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
pip() { .venv/bin/python -m pip --disable-pip-version-check "$@"; }
now() { .venv/bin/python -c 'import time; print(time.time())'; }
torch_version() {
    .venv/bin/python -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null
}

if have=$(torch_version); then
    echo "setup: torch $have already in .venv, kept"
elif [ -z "$INDEX" ] || [ "$INDEX" = none ]; then
    echo "setup: TORCH_INDEX_URL=none: torch comes with the project from pip's configured index"
else
    start=$(now)
    # --isolated: this index alone (no configured extra indexes, wheel folders or PIP_* settings).
    if ! pip index versions torch --isolated --index-url "$INDEX" --timeout "$TIMEOUT" --retries 0 \
            >/dev/null 2>&1; then
        waited=$(.venv/bin/python -c "print(f'{$(now) - $start:.1f}')")
        echo "setup: $INDEX not reachable (gave up after $waited s);" \
             "$FALLBACK from pip's configured index and local wheels"
        pip install -q "$FALLBACK"
    elif pip install -q --isolated --index-url "$INDEX" torch; then
        echo "setup: torch from $INDEX"
    else
        echo "setup: installing torch from $INDEX failed; $FALLBACK from pip's configured index"
        pip install -q "$FALLBACK"
    fi
fi

pip install -q -e '.[train,test]'
echo "setup: torch $(torch_version), mt_env $(.venv/bin/python -c 'import mt_env; print(mt_env.__version__)')"
