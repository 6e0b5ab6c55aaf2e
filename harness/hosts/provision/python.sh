#!/usr/bin/env bash
# Installs a Python host's pinned requirements into a virtual environment of the hosts' cache,
# idempotently (a stamp holding the requirements), with pip's cache inside the hosts' cache, and
# prints the environment's directory as its last line on stdout. Progress goes to stderr.
# Usage: python.sh CACHE_DIR NAME VERSION MIN_PYTHON REQUIREMENT...
# (MIN_PYTHON like 3.10: the first of python3.14, python3.13, ..., python3 that is at least it;
# exit status 3 when there is none.)
set -euo pipefail
CACHE="${1:?usage: python.sh CACHE_DIR NAME VERSION MIN_PYTHON REQUIREMENT...}"
NAME="${2:?usage}"; VERSION="${3:?usage}"; MIN="${4:?usage}"; shift 4
say() { printf 'provision[%s %s]: %s\n' "$NAME" "$VERSION" "$*" >&2; }
[[ "$VERSION" =~ ^[0-9]+(\.[0-9]+)+$ ]] || { say "error: not a pinned version: $VERSION"; exit 2; }
(( $# > 0 )) || { say "error: no requirement given"; exit 2; }
DIR="$CACHE/$NAME-$VERSION"
WANT="$*"
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then exec 9>"$DIR/.lock"; flock 9; fi
if [[ -x "$DIR/venv/bin/python" && "$(cat "$DIR/.stamp" 2>/dev/null || true)" == "$WANT" ]]; then
  say "up to date"
  printf '%s\n' "$DIR"
  exit 0
fi
# A Python interpreter new enough: on PATH by name, or one of pyenv's installed versions.
PY=""
for cand in python3.14 python3.13 python3.12 python3.11 python3.10 python3 \
    "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/3.1[0-9]*/bin/python3; do
  p="$(command -v "$cand" 2>/dev/null || true)"
  [[ -n "$p" ]] || continue
  if "$p" -c "import sys; sys.exit(0 if sys.version_info[:2] >= tuple(map(int, '$MIN'.split('.'))) else 1)" 2>/dev/null; then
    PY="$p"; break
  fi
done
# Exit status 3: a toolchain is missing (listsync host prints a skip line).
[[ -n "$PY" ]] || { say "skipped: no Python >= $MIN found (python3.N on PATH or a pyenv version)"; exit 3; }
say "installing $WANT into $DIR with $("$PY" --version 2>&1) (pip, first use) ..."
rm -f "$DIR/.stamp"
rm -rf "$DIR/venv"
"$PY" -m venv "$DIR/venv" 1>&2
PIP_CACHE_DIR="$CACHE/.pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$DIR/venv/bin/python" -m pip install --quiet --no-input "$@" 1>&2 \
  || { say "error: pip install failed (is the package index reachable?)"; exit 1; }
printf '%s' "$WANT" > "$DIR/.stamp"
say "installed"
printf '%s\n' "$DIR"
