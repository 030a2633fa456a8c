#!/usr/bin/env bash
# Browser tests of the web view (`parley serve --http`), from any working directory:
#   1. installs Debian's Chromium and chromedriver when they are missing;
#   2. installs Selenium (tests/browser/requirements.txt) into the repository's .venv;
#   3. builds the binary (cargo build -p parley-cli);
#   4. runs tests/browser with pytest in headless Chromium; screenshots go to
#      target/browser-test-output/.
# With --update-screenshot it then copies the thread page's screenshot to
# docs/screenshots/thread.png (the README's picture). Exits non-zero on any failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
out="$target_dir/browser-test-output"

update_screenshot=false
args=()
for arg in "$@"; do
  case "$arg" in
    --update-screenshot) update_screenshot=true ;;
    *) args+=("$arg") ;;
  esac
done

echo "== Chromium"
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  if ! apt-get install -y --no-install-recommends chromium chromium-driver; then
    apt-get update
    apt-get install -y --no-install-recommends chromium chromium-driver
  fi
fi
/usr/bin/chromium --version 2>/dev/null
/usr/bin/chromedriver --version

echo "== Selenium"
if [ ! -x "$repo/.venv/bin/python" ]; then
  python3 -m venv "$repo/.venv"
  "$repo/.venv/bin/python" -m pip install --quiet --upgrade pip
fi
"$repo/.venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"

echo "== build"
(cd "$repo" && cargo build -p parley-cli)

echo "== browser tests"
rm -rf "$out"
mkdir -p "$out"
# Selenium is given the driver's path and must never fetch one; these keep its
# manager and its usage statistics off the network all the same.
export SE_OFFLINE=true SE_AVOID_STATS=true
# From the repository, so pyproject.toml's pytest settings hold (warnings are errors).
cd "$repo"
PARLEY_BIN="$target_dir/debug/parley" PARLEY_BROWSER_OUT="$out" \
  "$repo/.venv/bin/python" -m pytest -q --tb=short -p no:cacheprovider tests/browser ${args[@]+"${args[@]}"}
echo "screenshots: $out"

if "$update_screenshot"; then
  mkdir -p "$repo/docs/screenshots"
  cp "$out/thread.png" "$repo/docs/screenshots/thread.png"
  echo "updated docs/screenshots/thread.png"
fi
