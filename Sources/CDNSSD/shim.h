#ifndef CHIRP_CDNSSD_SHIM_H
#define CHIRP_CDNSSD_SHIM_H
// DNS-SD: Avahi's Bonjour compatibility library on Linux, the system's on macOS. Avahi keeps its dns_sd.h in a folder
// of its own (its pkg-config file adds that folder to the include path; Package.swift does not use pkg-config).
#if __has_include(<avahi-compat-libdns_sd/dns_sd.h>)
#include <avahi-compat-libdns_sd/dns_sd.h>
#elif __has_include(<dns_sd.h>)
#include <dns_sd.h>
#else
#error "dns_sd.h not found: install Avahi's Bonjour compatibility library (Debian, Ubuntu: sudo apt-get install libavahi-compat-libdnssd-dev; or make deps)"
#endif
#endif
