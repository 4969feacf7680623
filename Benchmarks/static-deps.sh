#!/usr/bin/env bash
# Debian packages a release build with --static-swift-stdlib links against when it uses FoundationNetworking
# (URLSession: ChirpLogsURLSession and logdemo), which links libcurl, or FoundationXML, which links libxml2. The
# executables make bench builds no longer import either (ChirpLogs' URLSession capture moved to ChirpLogsURLSession);
# this stays for static builds of the rest. The runtime libraries come with Debian; the link needs their development packages.
# Idempotent: installs (apt-get, as root or through sudo) only what is missing, as scripts/avahi-up.sh does for Avahi.
set -euo pipefail

PACKAGES=(libcurl4-openssl-dev libxml2-dev)

missing=()
for package in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
((${#missing[@]} == 0)) && exit 0

as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        printf '==> ERROR: need root to install %s (not root, and no sudo found)\n' "${missing[*]}" >&2
        exit 1
    fi
}

printf '==> installing %s (for --static-swift-stdlib)\n' "${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! as_root apt-get install -y --no-install-recommends "${missing[@]}"; then
    as_root apt-get update
    as_root apt-get install -y --no-install-recommends "${missing[@]}"
fi
