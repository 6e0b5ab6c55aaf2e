#!/usr/bin/env bash
# Installs a Node host's pinned npm packages into a directory of the hosts' cache, idempotently
# (a stamp holding the package list), with npm's cache inside the hosts' cache, and prints the
# directory as its last line on stdout. Progress goes to stderr.
# Usage: npm.sh CACHE_DIR NAME VERSION PACKAGE@VERSION...
set -euo pipefail
CACHE="${1:?usage: npm.sh CACHE_DIR NAME VERSION PACKAGE@VERSION...}"
NAME="${2:?usage}"; VERSION="${3:?usage}"; shift 3
say() { printf 'provision[%s %s]: %s\n' "$NAME" "$VERSION" "$*" >&2; }
[[ "$VERSION" =~ ^[0-9]+(\.[0-9]+)+$ ]] || { say "error: not a pinned version: $VERSION"; exit 2; }
(( $# > 0 )) || { say "error: no package given"; exit 2; }
command -v npm >/dev/null 2>&1 || { say "error: npm is not installed (install Node.js and npm)"; exit 1; }
DIR="$CACHE/$NAME-$VERSION"
WANT="$*"
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then exec 9>"$DIR/.lock"; flock 9; fi
if [[ -d "$DIR/node_modules" && "$(cat "$DIR/.stamp" 2>/dev/null || true)" == "$WANT" ]]; then
  say "up to date"
else
  say "installing $WANT into $DIR (npm install, first use) ..."
  rm -f "$DIR/.stamp"
  [[ -f "$DIR/package.json" ]] || printf '{"private": true, "type": "module"}\n' > "$DIR/package.json"
  (cd "$DIR" && npm install --prefix "$DIR" --cache "$CACHE/.npm-cache" --no-audit --no-fund \
      --save-exact --loglevel=error "$@" 1>&2) \
    || { say "error: npm install failed (is the npm registry reachable?)"; exit 1; }
  printf '%s' "$WANT" > "$DIR/.stamp"
  say "installed"
fi
printf '%s\n' "$DIR"
