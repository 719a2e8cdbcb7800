#!/usr/bin/env bash
# Installs s3rver (the S3 server the S3 tests run against) from the committed
# lock file into tests/fixtures/s3rver/node_modules. Does nothing when the
# locked version is already installed. Needs Node.js, npm and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/../tests/fixtures/s3rver"

version_of() {  # version_of JSON_FILE JS_EXPRESSION
  command -v node >/dev/null || return 0
  node -e "try { console.log(require('./$1')$2) } catch (e) {}" 2>/dev/null || true
}
locked=$(version_of package-lock.json '.packages["node_modules/s3rver"].version')
installed=$(version_of node_modules/s3rver/package.json '.version')
if [[ -n $installed && $installed == "$locked" ]]; then
  exit 0
fi

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "install-s3rver: npm (with Node.js) is not installed; install them (scripts/setup.sh does), then run $0 again" >&2
  exit 1
fi
echo "install-s3rver: installing s3rver $locked into $(pwd)/node_modules"
npm ci --no-audit --no-fund --loglevel=error
