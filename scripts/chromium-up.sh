#!/usr/bin/env bash
# Make sure headless Chromium and its WebDriver (chromedriver) are installed, for the
# Chirp Console browser test (Console/Tests/ConsoleBrowser/browser_check.py).
#
# Idempotent: when both `chromium` and `chromedriver` are on PATH it only says so and
# exits 0. Otherwise it installs Debian's `chromium` and `chromium-driver` packages with
# apt-get; `apt-get update` is run only when that install fails first (stale or empty
# package lists), then the install is tried once more.
set -euo pipefail

APT_PACKAGES=(chromium chromium-driver)

say() { printf '==> %s\n' "$*"; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 1; }

# Run a command as root: directly if we are root, else through sudo if there is one.
as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run '$*' (not root, and no sudo found). Run this script as root."
    fi
}

have_both() {
    command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1
}

if have_both; then
    say "chromium and chromedriver are installed: $(command -v chromium), $(command -v chromedriver)"
    exit 0
fi

command -v apt-get >/dev/null 2>&1 || die "chromium/chromedriver missing and apt-get not found (not a Debian-like system)"

export DEBIAN_FRONTEND=noninteractive
install_packages() {
    as_root apt-get install -y --no-install-recommends "${APT_PACKAGES[@]}"
}

say "installing ${APT_PACKAGES[*]} with apt-get"
if ! install_packages; then
    say "install failed; running apt-get update and trying again"
    as_root apt-get update
    install_packages
fi

have_both || die "installed ${APT_PACKAGES[*]} but chromium or chromedriver is still not on PATH"
say "chromium and chromedriver are installed: $(command -v chromium), $(command -v chromedriver)"
