#!/bin/sh
# Vendors Redoc's standalone bundle (the dashboard's API reference renderer)
# from the npm registry into caddymodule/dashboard/static/redoc, pinned.
# Usage: scripts/vendor-redoc.sh [version]   (default: the pinned one)
set -eu
version=${1:-2.5.2}
dest=$(cd "$(dirname "$0")/.." && pwd)/caddymodule/dashboard/static/redoc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "redoc@$version" >/dev/null && tar xzf "redoc-$version.tgz")
cp "$tmp/package/bundles/redoc.standalone.js" "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" "$dest/"
cp "$tmp/package/LICENSE" "$dest/LICENSE"
cat >"$dest/VERSION" <<EOV
redoc $version (npm: redoc@$version, bundles/redoc.standalone.js), MIT licence (LICENSE;
third-party notices in redoc.standalone.js.LICENSE.txt). Update with
scripts/vendor-redoc.sh.
EOV
echo "vendored redoc $version into $dest"
