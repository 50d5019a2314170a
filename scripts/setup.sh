#!/usr/bin/env bash
# Create a virtual environment (.venv) and install what the tests and the trainer need:
#   1. torch, the CPU build, from PyTorch's own CPU wheel index, as PyTorch documents for
#      CPU-only Linux: pip install torch --index-url https://download.pytorch.org/whl/cpu
#      (pip's configured extra indexes and wheel folders are left out of this one step, so the
#      build that comes is that index's). Where the index cannot be reached, pip gives up within
#      seconds and torch comes from pip's configured index and local wheels instead;
#   2. the project, editable, with its extras (train and test unless EXTRAS says otherwise).
# Environment:
#   PYTHON               interpreter that creates the venv (default python3)
#   VENV                 the venv's folder (default .venv; scripts/integrations.sh makes
#                        .venv-sb3, .venv-ray, ... with EXTRAS=train,test,sb3 and so on)
#   EXTRAS               the project's extras to install (default train,test)
#   TORCH_INDEX_URL      index torch comes from (default https://download.pytorch.org/whl/cpu;
#                        e.g. https://download.pytorch.org/whl/cu126 for CUDA 12.6); "none" skips
#                        step 1 and torch comes with the train extra from pip's configured index
#   TORCH_FALLBACK       what is installed when that index is unreachable (default torch==2.13.0,
#                        whose CPU wheel these machines keep on disk; elsewhere PyPI's build)
#   TORCH_INDEX_TIMEOUT  seconds pip waits for the index before falling back (default 5)
# A torch already in the venv is kept; to change builds: .venv/bin/python -m pip uninstall torch
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
INDEX=${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}
FALLBACK=${TORCH_FALLBACK:-torch==2.13.0}
TIMEOUT=${TORCH_INDEX_TIMEOUT:-5}
VENV=${VENV:-.venv}
EXTRAS=${EXTRAS:-train,test}
VPY=$VENV/bin/python

if [ ! -x "$VPY" ]; then
    "$PY" -m venv "$VENV"
fi
pip() { "$VPY" -m pip --disable-pip-version-check "$@"; }
now() { "$VPY" -c 'import time; print(time.time())'; }
torch_version() {
    "$VPY" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null
}

if have=$(torch_version); then
    echo "setup: torch $have already in $VENV, kept"
elif [ -z "$INDEX" ] || [ "$INDEX" = none ]; then
    echo "setup: TORCH_INDEX_URL=none: torch comes with the project from pip's configured index"
else
    start=$(now)
    # --isolated: this index alone (no configured extra indexes, wheel folders or PIP_* settings).
    if ! pip index versions torch --isolated --index-url "$INDEX" --timeout "$TIMEOUT" --retries 0 \
            >/dev/null 2>&1; then
        waited=$("$VPY" -c "print(f'{$(now) - $start:.1f}')")
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

pip install -q -e ".[$EXTRAS]"
echo "setup: $VENV: torch $(torch_version), mt_env $("$VPY" -c 'import mt_env; print(mt_env.__version__)')"
