#!/usr/bin/env bash
# Installs one third-party SDK adapter (ts-v1, ts-v2, python, fastmcp, server-everything, go-sdk, mcp-go or java) into a cache directory
# from its committed lockfile, idempotently (a stamp keyed by the lockfile hash and runtime version makes
# re-runs instant; compiled adapters are rebuilt only when their sources change), and prints the adapter's
# launch description as one JSON line on stdout. Progress goes to stderr.
#
#   harness/adapters/provision.sh IMPL
#   harness/adapters/provision.sh java --relock    rewrites java/dependencies.lock from Maven's resolution
#
# Cache: $LISTSYNC_CACHE/IMPL if LISTSYNC_CACHE is set, else <repo>/.cache/adapters/IMPL. The Go module and
# build caches (GOMODCACHE, GOPATH, GOCACHE) are shared by the two Go adapters in <cache root>/_go; the Java
# adapter's Maven repository is <cache>/m2 (-Dmaven.repo.local). Nothing is written outside the cache.
# A missing toolchain fails at once with one line naming what to install, and the switch that skips the
# third-party SDK rows explicitly (LISTSYNC_HARNESS_SKIP_SDKS=1).
# Stdout (one line): {"impl","cache","sdk":{package:version},"launch":{"server":[argv],"client":[argv]}}
# The same JSON is written to <cache>/launch.json. Run the argv with the LISTSYNC_* environment
# described in docs/harness-protocol.md; the adapter's role comes from LISTSYNC_ROLE.
set -euo pipefail

say() { printf 'provision[%s]: %s\n' "${IMPL:-?}" "$*" >&2; }
die() { say "error: $*"; exit 1; }

IMPL="${1:-}"
RELOCK="${2:-}"
case "$IMPL" in
  ts-v1|ts-v2|python|fastmcp|server-everything|go-sdk|mcp-go|java) ;;
  *) printf 'usage: %s ts-v1|ts-v2|python|fastmcp|server-everything|go-sdk|mcp-go|java [--relock]\n' "$0" >&2; exit 2 ;;
esac
SKIP_HINT="or set LISTSYNC_HARNESS_SKIP_SDKS=1 to skip the third-party SDK rows"

ADAPTERS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$ADAPTERS/../.." && pwd)"
if [[ -n "${LISTSYNC_CACHE:-}" ]]; then ROOT="$LISTSYNC_CACHE"; else ROOT="$REPO/.cache/adapters"; fi
CACHE="$ROOT/$IMPL"
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
  ts-v1|ts-v2|server-everything)
    command -v node >/dev/null 2>&1 || die "node is not installed: install Node.js >= 20 (apt-get install nodejs npm), $SKIP_HINT"
    command -v npm >/dev/null 2>&1 || die "npm is not installed: install npm (apt-get install npm), $SKIP_HINT"
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
    case "$IMPL" in
      ts-v1) PKGS=(@modelcontextprotocol/sdk) ;;
      ts-v2) PKGS=(@modelcontextprotocol/client @modelcontextprotocol/server) ;;
      server-everything) PKGS=(@modelcontextprotocol/server-everything @modelcontextprotocol/sdk) ;;
    esac
    SDK_JSON=""
    for p in "${PKGS[@]}"; do
      v="$(node -e 'process.stdout.write(require(process.argv[1]).version)' "$APP/$IMPL/node_modules/$p/package.json")"
      SDK_JSON="${SDK_JSON:+$SDK_JSON,}\"$p\":\"$v\""
    done
    NODE_BIN="$(command -v node)"
    ENTRY="$APP/$IMPL/adapter.mjs"
    LAUNCH="{\"impl\":\"$IMPL\",\"cache\":\"$CACHE\",\"runtime\":\"node $NODE_VERSION\",\"sdk\":{$SDK_JSON},\"launch\":{\"server\":[\"$NODE_BIN\",\"$ENTRY\"],\"client\":[\"$NODE_BIN\",\"$ENTRY\"]}}"
    ;;
  python|fastmcp)
    # The FastMCP adapter runs on the Python adapter's entry point and control channel (LISTSYNC_PYTHON_SDK).
    if [[ "$IMPL" == python ]]; then PKG=mcp; else PKG=fastmcp; fi
    command -v python3 >/dev/null 2>&1 || die "python3 is not installed: install Python >= 3.10 (apt-get install python3 python3-venv), $SKIP_HINT"
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
    [[ "$PY_AGE" == new ]] || die "python3 $PY_VERSION is too old: $PKG needs >= 3.10"
    [[ "$PY_VENV" == venv ]] || die "python3 has no venv/ensurepip module (apt-get install python3-venv)"
    APP="$CACHE/app"
    copy_sources "$ADAPTERS/python" "$APP/$IMPL"
    [[ "$IMPL" == python ]] || copy_sources "$ADAPTERS/$IMPL" "$APP/$IMPL"
    LOCK="$ADAPTERS/$IMPL/requirements.lock"
    [[ -f "$LOCK" ]] || die "missing lockfile $LOCK"
    STAMP="lock=$(hash_of "$LOCK") python=$PY_VERSION"
    VENV="$CACHE/venv"
    if [[ -x "$VENV/bin/python" && "$(cat "$CACHE/.stamp" 2>/dev/null || true)" == "$STAMP" ]]; then
      say "up to date ($STAMP)"
    else
      say "creating venv $VENV and installing $IMPL/requirements.lock (pip) ..."
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
      "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("'"$PKG"'"))' > "$CACHE/.sdk-version"
    fi
    SDK_VERSION="$(cat "$CACHE/.sdk-version")"
    ENTRY="$APP/$IMPL/adapter.py"
    LAUNCH="{\"impl\":\"$IMPL\",\"cache\":\"$CACHE\",\"runtime\":\"python $PY_VERSION\",\"sdk\":{\"$PKG\":\"$SDK_VERSION\"},\"launch\":{\"server\":[\"$VENV/bin/python\",\"$ENTRY\"],\"client\":[\"$VENV/bin/python\",\"$ENTRY\"]}}"
    ;;
  go-sdk|mcp-go)
    command -v go >/dev/null 2>&1 || die "go is not installed: install Go >= 1.25 (apt-get install golang-go, or a Go toolchain on PATH), $SKIP_HINT"
    GO_VERSION="$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null || true)"   # go1.26.8
    GO_MINOR="${GO_VERSION#go1.}"; GO_MINOR="${GO_MINOR%%.*}"
    [[ "$GO_MINOR" =~ ^[0-9]+$ ]] && (( GO_MINOR >= 25 )) || die "go $GO_VERSION is too old: the SDKs need Go >= 1.25 (install a newer Go), $SKIP_HINT"
    SRC="$ADAPTERS/go"
    LOCK="$SRC/go.sum"
    [[ -f "$LOCK" && -f "$SRC/go.mod" ]] || die "missing lockfile $SRC/go.mod or $LOCK"
    if [[ "$IMPL" == go-sdk ]]; then PKG=./gosdk; MOD=github.com/modelcontextprotocol/go-sdk; else PKG=./mcpgo; MOD=github.com/mark3labs/mcp-go; fi
    # The module and build caches live in the cache root, shared by both Go adapters, never in ~/go.
    export GOMODCACHE="$ROOT/_go/mod" GOCACHE="$ROOT/_go/build" GOPATH="$ROOT/_go/path"
    export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
    STAMP="lock=$(hash_of "$SRC/go.mod" "$LOCK") $GO_VERSION"
    SOURCES="$(cd "$SRC" && find . -name '*.go' -type f | LC_ALL=C sort)"
    BUILD="src=$(cd "$SRC" && sha256sum $SOURCES | sha256sum | cut -c1-16) $STAMP"
    BIN="$CACHE/bin/adapter"
    if [[ -x "$BIN" && "$(cat "$CACHE/.stamp" 2>/dev/null || true)" == "$BUILD" ]]; then
      say "up to date ($STAMP)"
    else
      say "downloading the Go modules pinned by go/go.sum into $ROOT/_go and building $PKG (go build) ..."
      rm -f "$CACHE/.stamp"
      mkdir -p "$CACHE/bin"
      (cd "$SRC" && go mod download 1>&2) || die "go mod download failed (is the Go module proxy reachable?)"
      (cd "$SRC" && go build -o "$BIN" "$PKG" 1>&2) || die "go build $PKG failed"
      printf '%s' "$BUILD" > "$CACHE/.stamp"
    fi
    SDK_VERSION="$(awk -v m="$MOD" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$SRC/go.mod")"
    [[ -n "$SDK_VERSION" ]] || die "$MOD is not required by go/go.mod"
    LAUNCH="{\"impl\":\"$IMPL\",\"cache\":\"$CACHE\",\"runtime\":\"$GO_VERSION\",\"sdk\":{\"$MOD\":\"$SDK_VERSION\"},\"launch\":{\"server\":[\"$BIN\"],\"client\":[\"$BIN\"]}}"
    ;;
  java)
    command -v java >/dev/null 2>&1 || die "java is not installed: install a JDK >= 17 (apt-get install openjdk-17-jdk-headless), $SKIP_HINT"
    command -v javac >/dev/null 2>&1 || die "javac is not installed (a JRE without the JDK): install openjdk-17-jdk-headless, $SKIP_HINT"
    command -v mvn >/dev/null 2>&1 || die "mvn is not installed: install Maven >= 3.8 (apt-get install maven), $SKIP_HINT"
    JAVA_BIN="$(command -v java)"
    JAVA_VERSION="$("$JAVA_BIN" -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.version = / { print $2; exit }')"
    JAVA_MAJOR="${JAVA_VERSION%%.*}"
    [[ "$JAVA_MAJOR" =~ ^[0-9]+$ ]] && (( JAVA_MAJOR >= 17 )) || die "java $JAVA_VERSION is too old: the SDK needs Java >= 17, $SKIP_HINT"
    SRC="$ADAPTERS/java"
    LOCK="$SRC/dependencies.lock"
    M2="$CACHE/m2"
    RESOLVED="$CACHE/resolved.lock"
    # Maven's resolution, written in dependencies.lock's format: coordinates and the jar's sha256.
    resolve() {
      local list="$CACHE/dependency-list.txt"
      (cd "$SRC" && mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$M2" dependency:list -DincludeScope=runtime \
          -DoutputAbsoluteArtifactFilename=true -DoutputFile="$list" >"$CACHE/mvn.log" 2>&1) \
        || { tail -n 30 "$CACHE/mvn.log" >&2; die "mvn dependency:list failed (is Maven Central reachable?)"; }
      : > "$RESOLVED.tmp"
      while read -r coord rest; do
        [[ "$coord" == *:*:jar:*:* ]] || continue
        IFS=: read -r g a _ v _ jar <<<"$coord"
        [[ -f "$jar" ]] || die "Maven resolved $g:$a:$v but $jar is missing"
        printf '%s:%s:%s sha256=%s %s\n' "$g" "$a" "$v" "$(sha256sum "$jar" | cut -c1-64)" "$jar" >> "$RESOLVED.tmp"
      done < "$list"
      LC_ALL=C sort -o "$RESOLVED" "$RESOLVED.tmp" && rm -f "$RESOLVED.tmp"
    }
    lock_view() { awk '!/^#/ && NF { print $1, $2 }' "$1"; }
    if [[ "$RELOCK" == --relock ]]; then
      resolve
      { printf '# Maven resolution of java/pom.xml (runtime scope): group:artifact:version and the jar'"'"'s sha256.\n'
        printf '# provision.sh checks every install against it; regenerate with: harness/adapters/provision.sh java --relock\n'
        lock_view "$RESOLVED"; } > "$LOCK"
      say "wrote $LOCK"
    fi
    [[ -f "$LOCK" ]] || die "missing lockfile $LOCK (create it with: harness/adapters/provision.sh java --relock)"
    STAMP="lock=$(hash_of "$SRC/pom.xml" "$LOCK") java=$JAVA_VERSION"
    SOURCES="$(cd "$SRC" && find src -name '*.java' -type f | LC_ALL=C sort)"
    BUILD="src=$(cd "$SRC" && sha256sum $SOURCES | sha256sum | cut -c1-16) $STAMP"
    JAR="$CACHE/adapter.jar"
    JSA="$CACHE/adapter.jsa"
    if [[ -f "$JAR" && -s "$CACHE/classpath" && "$(cat "$CACHE/.stamp" 2>/dev/null || true)" == "$BUILD" ]]; then
      say "up to date ($STAMP)"
    else
      say "resolving java/pom.xml with Maven into $M2, checking it against dependencies.lock, compiling the adapter (javac) and its class-data archive ..."
      rm -f "$CACHE/.stamp"
      [[ -s "$RESOLVED" && "$RELOCK" == --relock ]] || resolve
      if ! diff <(lock_view "$LOCK") <(lock_view "$RESOLVED") >&2; then
        die "Maven resolved other artifacts than java/dependencies.lock records (diff above; after a deliberate change run: harness/adapters/provision.sh java --relock)"
      fi
      CP="$(awk '{ print $3 }' "$RESOLVED" | paste -sd: -)"
      rm -rf "$CACHE/classes" && mkdir -p "$CACHE/classes"
      (cd "$SRC" && javac --release 17 -nowarn -cp "$CP" -d "$CACHE/classes" $SOURCES 1>&2) || die "javac failed"
      (cd "$CACHE/classes" && jar cf "$JAR" .) || die "jar failed"
      printf '%s' "$JAR:$CP" > "$CACHE/classpath"
      # Class-data sharing: one warm-up run (an in-process server and client) records the classes every
      # adapter run loads; with the archive a JVM starts in about half the time.
      rm -f "$JSA"
      "$JAVA_BIN" -XX:ArchiveClassesAtExit="$JSA" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xlog:cds=off -Xlog:cds+dynamic=off \
        -cp "$JAR:$CP" listsync.adapter.Main --warm-up >/dev/null 2>&1 || say "warning: the class-data warm-up failed; adapters start without it"
      printf '%s' "$BUILD" > "$CACHE/.stamp"
    fi
    CLASSPATH_ARG="$(cat "$CACHE/classpath")"
    SDK_VERSION="$(awk '$1 ~ /^io\.modelcontextprotocol\.sdk:mcp:/ { split($1, c, ":"); print c[3]; exit }' "$LOCK")"
    JVM="\"$JAVA_BIN\",\"-XX:+UseSerialGC\",\"-XX:TieredStopAtLevel=1\",\"-Xshare:auto\",\"-XX:SharedArchiveFile=$JSA\",\"-Xlog:cds=off\",\"-Xlog:cds+dynamic=off\",\"-cp\",\"$CLASSPATH_ARG\",\"listsync.adapter.Main\""
    LAUNCH="{\"impl\":\"java\",\"cache\":\"$CACHE\",\"runtime\":\"java $JAVA_VERSION\",\"sdk\":{\"io.modelcontextprotocol.sdk:mcp\":\"$SDK_VERSION\"},\"launch\":{\"server\":[$JVM],\"client\":[$JVM]}}"
    ;;
esac

printf '%s\n' "$LAUNCH" > "$CACHE/launch.json"
printf '%s\n' "$LAUNCH"
