#!/usr/bin/env bash
# The light core alone: install the built wheel (no extras) into a fresh venv, check that no extra
# came with it, audit a local scikit-learn model (skops file) from the command line, and check that
# a command needing an extra fails with one line naming it.   usage: .ci/smoke_core.sh DIST_DIR
set -euo pipefail
dist=$(cd "${1:-dist}" && pwd)
wheel=$(ls "$dist"/fairprobe-*.whl | head -n1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install --quiet --upgrade pip
if [ "${FLOORS:-0}" = 1 ]; then
  # the tested floor: every core dependency at the lowest release its `>=` admits
  floors=$("$py" - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(" ".join(re.sub(r">=([0-9.]+)$", r"==\1.*", d) for d in deps))
PY
)
  echo "floors: $floors"
  # shellcheck disable=SC2086
  "$py" -m pip install --quiet "$wheel" $floors
else
  "$py" -m pip install --quiet "$wheel"
fi
cd "$work"

echo "core venv: $(du -sm "$work/venv" | cut -f1) MB"
for mod in fastapi uvicorn cvxpy dask cryptography matplotlib jinja2 pyarrow fairlearn; do
  if "$py" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$mod') is None)"; then
    echo "FAIL: the core install brought $mod (it belongs in an extra)"; exit 1
  fi
done

"$work/venv/bin/fairprobe" --version
"$work/venv/bin/fairprobe" --help >/dev/null

# a local model: the platform's logistic regression on the bundled Adult data, saved with skops
"$py" - <<'PY'
import skops.io as sio
from fairprobe.platform.model import AUDIT_FEATURES, train_default_model
pipe = train_default_model(seed=0)
sio.dump(pipe, "model.skops")
trusted = sio.get_untrusted_types(file="model.skops")
cols = ", ".join(f'"{c}"' for c in AUDIT_FEATURES)
with open("local.toml", "w") as fh:
    fh.write('kind = "local"\npath = "model.skops"\n')
    fh.write("trusted = [" + ", ".join(f'"{t}"' for t in trusted) + "]\n")
    fh.write(f"feature_columns = [{cols}]\n")
PY
# the platform model uses sex itself, so the group column is sent (--send-group)
"$work/venv/bin/fairprobe" audit --backend-config local.toml --budget 1000 --seed 0 \
  --send-group --no-progress --cache cache.sqlite --json audit.json
"$py" -c "import json; d = json.load(open('audit.json')); assert d['schema'] == 'fairprobe/1' and d['kind'] == 'audit', d.get('kind'); print('audit verdict:', d['verdict'])"

# an extra that is not installed: one line naming it, no traceback, non-zero exit
set +e
"$work/venv/bin/fairprobe" report audit.json --html report.html 2>err.txt
rc=$?
set -e
cat err.txt
if [ "$rc" -eq 0 ] || ! grep -q "fairprobe\[report\]" err.txt || grep -q Traceback err.txt; then
  echo "FAIL: a missing extra must give one error line naming fairprobe[report] (rc=$rc)"; exit 1
fi
echo "core smoke test passed"
