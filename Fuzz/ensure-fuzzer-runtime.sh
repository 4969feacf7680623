#!/usr/bin/env bash
# Make sure `swiftc -sanitize=fuzzer,address` links on this machine (the libFuzzer runtime is part of the Swift
# toolchain: <toolchain>/usr/lib/swift/clang/lib/linux/libclang_rt.fuzzer-x86_64.a; /opt/swift has it).
#
# Idempotent; when the runtime is there it only checks. When it is missing (a toolchain built without compiler-rt's
# fuzzer), it installs Debian's copy (libclang-rt-14-dev, /usr/lib/llvm-14/lib/clang/14*/lib/linux/) and links its
# libFuzzer archives into the toolchain's runtime folder, then checks again.
set -euo pipefail

SWIFTC="${SWIFTC:-swiftc}"
say() { printf '==> %s\n' "$*"; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 1; }

probe() {
    local dir
    dir="$(mktemp -d)"
    trap 'rm -rf "$dir"' RETURN
    printf '@_cdecl("LLVMFuzzerTestOneInput")\npublic func probe(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt { 0 }\n' > "$dir/probe.swift"
    "$SWIFTC" -sanitize=fuzzer,address -parse-as-library "$dir/probe.swift" -o "$dir/probe" >/dev/null 2>&1 &&
        "$dir/probe" -runs=1 >/dev/null 2>&1
}

if probe; then
    exit 0
fi

say "swiftc -sanitize=fuzzer does not link: installing the libFuzzer runtime (libclang-rt-14-dev)"
[[ $EUID -eq 0 ]] || die "need root to install libclang-rt-14-dev"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq libclang-rt-14-dev >/dev/null
resource_dir="$(dirname "$(command -v "$SWIFTC")")/../lib/swift/clang/lib/linux"
mkdir -p "$resource_dir"
for archive in /usr/lib/llvm-14/lib/clang/14*/lib/linux/libclang_rt.fuzzer*-x86_64.a; do
    [[ -e "$resource_dir/$(basename "$archive")" ]] || ln -s "$archive" "$resource_dir/"
done
probe || die "swiftc -sanitize=fuzzer,address still does not link; see Docs/Reliability.md, Fuzzing"
say "libFuzzer runtime installed"
