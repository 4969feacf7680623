#ifndef CHIRP_CDNSSD_SHIM_H
#define CHIRP_CDNSSD_SHIM_H
// DNS-SD: Avahi's compatibility library on Linux (pkg-config avahi-compat-libdns_sd), the system's on macOS.
#include <dns_sd.h>
#endif
