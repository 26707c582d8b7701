#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian 12 machine (idempotent; needs root for apt).
set -euo pipefail
pkgs=(lttng-tools liblttng-ust-dev babeltrace2 libbabeltrace2-dev python3-bt2 strace libxml2-utils chromium fonts-dejavu-core tmux protobuf-compiler libisal-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "swift (6.1 or newer) must be on PATH" >&2; exit 1; }
