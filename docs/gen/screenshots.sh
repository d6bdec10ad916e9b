#!/usr/bin/env bash
# screenshots.sh: what a reader of the docs site sees, as PNG files: the landing page and one guide, taken by
# headless Chromium (apt-get install chromium) from the site built here and served on loopback (a page over
# http, as a reader gets it, not file://). For reviews and notes; nothing in CI needs it.
#   docs/gen/screenshots.sh [OUT]       (default build/screenshots; the site is built into OUT/site)
# Settings: PYTHON (.venv/bin/python, which has mkdocs), CHROMIUM (chromium), WIDTH x HEIGHT (1280 x 1100).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-build/screenshots}"
python="${PYTHON:-.venv/bin/python}"
chromium="${CHROMIUM:-chromium}"
command -v "$chromium" >/dev/null || { echo "screenshots: no $chromium: apt-get install chromium" >&2; exit 1; }
mkdir -p "$out"
NO_MKDOCS_2_WARNING=1 "$python" -m mkdocs build --strict -q -d "$out/site"
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$python" -m http.server "$port" --bind 127.0.0.1 --directory "$out/site" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do "$python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break; sleep 0.1; done
# --no-sandbox: Chromium refuses to run its sandbox as root, which is how this machine runs.
shoot() {
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="${WIDTH:-1280},${HEIGHT:-1100}" \
    --virtual-time-budget=3000 --screenshot="$out/$1.png" "http://127.0.0.1:$port/$2" >/dev/null 2>&1
  echo "screenshots: $out/$1.png ($2)"
}
shoot landing ""
shoot guide-port-ddp "guides/port-ddp/"
shoot concept-architecture "concepts/architecture/"
