#!/usr/bin/env bash
# Installs one third-party SDK adapter (ts-v1, ts-v2 or python) into a cache directory from its committed
# lockfile, idempotently (a stamp keyed by the lockfile hash and runtime version makes re-runs instant),
# and prints the adapter's launch description as one JSON line on stdout. Progress goes to stderr.
#
#   harness/adapters/provision.sh IMPL
#
# Cache: $LISTSYNC_CACHE/IMPL if LISTSYNC_CACHE is set, else <repo>/.cache/adapters/IMPL.
# Stdout (one line): {"impl","cache","sdk":{package:version},"launch":{"server":[argv],"client":[argv]}}
# The same JSON is written to <cache>/launch.json. Run the argv with the LISTSYNC_* environment
# described in docs/harness-protocol.md; the adapter's role comes from LISTSYNC_ROLE.
set -euo pipefail

say() { printf 'provision[%s]: %s\n' "${IMPL:-?}" "$*" >&2; }
die() { say "error: $*"; exit 1; }

IMPL="${1:-}"
case "$IMPL" in
  ts-v1|ts-v2|python) ;;
  *) printf 'usage: %s ts-v1|ts-v2|python\n' "$0" >&2; exit 2 ;;
esac

ADAPTERS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$ADAPTERS/../.." && pwd)"
if [[ -n "${LISTSYNC_CACHE:-}" ]]; then CACHE="$LISTSYNC_CACHE/$IMPL"; else CACHE="$REPO/.cache/adapters/$IMPL"; fi
mkdir -p "$CACHE"

# One provisioner per cache dir at a time (the harness may start several runs at once).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.lock"
  flock 9
fi

hash_of() { sha256sum "$@" | sha256sum | cut -c1-16; }

# Copies the adapter's own sources (never node_modules) into the cache, every run, so edits take effect.
copy_sources() {
  local src="$1" dst="$2"
  mkdir -p "$dst"
  find "$src" -maxdepth 1 -type f \( -name '*.mjs' -o -name '*.py' -o -name '*.json' -o -name '*.lock' \) \
    -exec cp -f {} "$dst/" \;
}

case "$IMPL" in
  ts-v1|ts-v2)
    command -v node >/dev/null 2>&1 || die "node is not installed (need Node.js >= 20 on PATH)"
    command -v npm >/dev/null 2>&1 || die "npm is not installed (need npm on PATH)"
    NODE_VERSION="$(node --version)"
    NODE_MAJOR="${NODE_VERSION#v}"; NODE_MAJOR="${NODE_MAJOR%%.*}"
    (( NODE_MAJOR >= 20 )) || die "node $NODE_VERSION is too old: the SDK needs Node.js >= 20"
    APP="$CACHE/app"
    copy_sources "$ADAPTERS/js-common" "$APP/js-common"
    copy_sources "$ADAPTERS/$IMPL" "$APP/$IMPL"
    LOCK="$ADAPTERS/$IMPL/package-lock.json"
    [[ -f "$LOCK" ]] || die "missing lockfile $LOCK"
    STAMP="lock=$(hash_of "$LOCK" "$ADAPTERS/$IMPL/package.json") node=$NODE_MAJOR"
    if [[ -d "$APP/$IMPL/node_modules" && "$(cat "$CACHE/.stamp" 2>/dev/null || true)" == "$STAMP" ]]; then
      say "up to date ($STAMP)"
    else
      say "installing npm packages from $IMPL/package-lock.json into $APP/$IMPL (npm ci) ..."
      rm -f "$CACHE/.stamp"
      (cd "$APP/$IMPL" && npm ci --no-audit --no-fund --loglevel=error 1>&2) || die "npm ci failed (is the npm registry reachable?)"
      printf '%s' "$STAMP" > "$CACHE/.stamp"
      say "installed"
    fi
    if [[ "$IMPL" == ts-v1 ]]; then PKGS=(@modelcontextprotocol/sdk); else PKGS=(@modelcontextprotocol/client @modelcontextprotocol/server); fi
    SDK_JSON=""
    for p in "${PKGS[@]}"; do
      v="$(node -e 'process.stdout.write(require(process.argv[1]).version)' "$APP/$IMPL/node_modules/$p/package.json")"
      SDK_JSON="${SDK_JSON:+$SDK_JSON,}\"$p\":\"$v\""
    done
    NODE_BIN="$(command -v node)"
    ENTRY="$APP/$IMPL/adapter.mjs"
    LAUNCH="{\"impl\":\"$IMPL\",\"cache\":\"$CACHE\",\"runtime\":\"node $NODE_VERSION\",\"sdk\":{$SDK_JSON},\"launch\":{\"server\":[\"$NODE_BIN\",\"$ENTRY\"],\"client\":[\"$NODE_BIN\",\"$ENTRY\"]}}"
    ;;
  python)
    command -v python3 >/dev/null 2>&1 || die "python3 is not installed (need Python >= 3.10 on PATH)"
    # One interpreter start: version, minimum version, and the venv module (3 separate runs cost ~1 s).
    PY_CHECK="$(python3 -c 'import sys
v = "%d.%d" % sys.version_info[:2]
try:
    import venv, ensurepip
    ok = "venv"
except ImportError:
    ok = "novenv"
print(v, "old" if sys.version_info < (3, 10) else "new", ok)')"
    read -r PY_VERSION PY_AGE PY_VENV <<<"$PY_CHECK"
    [[ "$PY_AGE" == new ]] || die "python3 $PY_VERSION is too old: mcp needs >= 3.10"
    [[ "$PY_VENV" == venv ]] || die "python3 has no venv/ensurepip module (apt-get install python3-venv)"
    APP="$CACHE/app"
    copy_sources "$ADAPTERS/python" "$APP/python"
    LOCK="$ADAPTERS/python/requirements.lock"
    [[ -f "$LOCK" ]] || die "missing lockfile $LOCK"
    STAMP="lock=$(hash_of "$LOCK") python=$PY_VERSION"
    VENV="$CACHE/venv"
    if [[ -x "$VENV/bin/python" && "$(cat "$CACHE/.stamp" 2>/dev/null || true)" == "$STAMP" ]]; then
      say "up to date ($STAMP)"
    else
      say "creating venv $VENV and installing python/requirements.lock (pip) ..."
      rm -f "$CACHE/.stamp"
      rm -rf "$VENV"
      python3 -m venv "$VENV" 1>&2 || die "python3 -m venv failed"
      "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$LOCK" 1>&2 \
        || die "pip install failed (is PyPI reachable?)"
      printf '%s' "$STAMP" > "$CACHE/.stamp"
      say "installed"
    fi
    # The installed version, cached beside the stamp (asking the venv's python costs a second or two).
    if [[ ! -s "$CACHE/.sdk-version" || "$CACHE/.sdk-version" -ot "$CACHE/.stamp" ]]; then
      "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' > "$CACHE/.sdk-version"
    fi
    MCP_VERSION="$(cat "$CACHE/.sdk-version")"
    ENTRY="$APP/python/adapter.py"
    LAUNCH="{\"impl\":\"python\",\"cache\":\"$CACHE\",\"runtime\":\"python $PY_VERSION\",\"sdk\":{\"mcp\":\"$MCP_VERSION\"},\"launch\":{\"server\":[\"$VENV/bin/python\",\"$ENTRY\"],\"client\":[\"$VENV/bin/python\",\"$ENTRY\"]}}"
    ;;
esac

printf '%s\n' "$LAUNCH" > "$CACHE/launch.json"
printf '%s\n' "$LAUNCH"
