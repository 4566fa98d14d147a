#!/usr/bin/env bash
# Install the benchmark's peer language servers into bench/.peers/ (never globally).
# Idempotent: a second run only checks that everything is there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
peers="$here/.peers"
python="${PYTHON:-python3}"

RUMDL_VERSION="${RUMDL_VERSION:-0.3.0}"
VSCODE_MD_LS_VERSION="${VSCODE_MD_LS_VERSION:-0.5.0}"
MARKDOWN_IT_VERSION="${MARKDOWN_IT_VERSION:-14.1.0}"

mkdir -p "$peers"

# rumdl (Rust markdown linter with an LSP server), from PyPI.
if [ ! -x "$peers/venv/bin/rumdl" ]; then
    "$python" -m venv "$peers/venv"
    "$peers/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "rumdl==$RUMDL_VERSION" || "$peers/venv/bin/python" -m pip install --quiet \
        --disable-pip-version-check rumdl
fi
echo "rumdl: $("$peers/venv/bin/rumdl" --version 2>/dev/null || echo missing)"

# vscode-markdown-languageserver + markdown-it (for the markdown/parse proxy), from npm.
if command -v npm >/dev/null 2>&1; then
    node_dir="$peers/node"
    if [ ! -f "$node_dir/node_modules/vscode-markdown-languageserver/package.json" ] \
        || [ ! -f "$node_dir/node_modules/markdown-it/package.json" ]; then
        mkdir -p "$node_dir"
        [ -f "$node_dir/package.json" ] || echo '{"name": "memory-ls-bench-peers", "private": true}' \
            > "$node_dir/package.json"
        npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error \
            "vscode-markdown-languageserver@$VSCODE_MD_LS_VERSION" \
            "markdown-it@$MARKDOWN_IT_VERSION"
    fi
    echo "vscode-markdown-languageserver: $(node -p "require('$node_dir/node_modules/vscode-markdown-languageserver/package.json').version" 2>/dev/null || echo missing)"
else
    echo "vscode-markdown-languageserver: skipped (npm not found)"
fi
