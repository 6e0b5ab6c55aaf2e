#!/usr/bin/env bash
# Installs Claude Code (npm @anthropic-ai/claude-code) at one pinned version into the hosts' cache,
# idempotently (a stamp per version), and prints the install directory as its last line on stdout.
# Progress goes to stderr. Usage: provision.sh CACHE_DIR VERSION
set -euo pipefail
say() { printf 'provision[claude-code %s]: %s\n' "${VERSION:-?}" "$*" >&2; }
CACHE="${1:?usage: provision.sh CACHE_DIR VERSION}"
VERSION="${2:?usage: provision.sh CACHE_DIR VERSION}"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { say "error: not a pinned version: $VERSION"; exit 2; }
command -v npm >/dev/null 2>&1 || { say "error: npm is not installed (install Node.js and npm)"; exit 1; }
DIR="$CACHE/claude-code-$VERSION"
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then exec 9>"$DIR/.lock"; flock 9; fi
if [[ -x "$DIR/node_modules/.bin/claude" && "$(cat "$DIR/.stamp" 2>/dev/null || true)" == "$VERSION" ]]; then
  say "up to date"
else
  say "installing @anthropic-ai/claude-code@$VERSION into $DIR (npm install, first use) ..."
  rm -f "$DIR/.stamp"
  (cd "$DIR" && npm install --prefix "$DIR" --no-audit --no-fund --no-save --loglevel=error \
      "@anthropic-ai/claude-code@$VERSION" 1>&2) || { say "error: npm install failed (is the npm registry reachable?)"; exit 1; }
  printf '%s' "$VERSION" > "$DIR/.stamp"
  say "installed $("$DIR/node_modules/.bin/claude" --version 2>/dev/null || echo '?')"
fi
printf '%s\n' "$DIR"
