#ifndef CHIRP_CAVAHICLIENT_SHIM_H
#define CHIRP_CAVAHICLIENT_SHIM_H
// Avahi's own client library, used on Linux by Chirp's native discovery backend: one D-Bus connection per process,
// whatever the number of browses, resolves and registrations. The libraries are linked by module.modulemap.
#if !__has_include(<avahi-client/client.h>)
#error "avahi-client/client.h not found: install Avahi's client library (Debian, Ubuntu: sudo apt-get install libavahi-client-dev; or make deps)"
#endif
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#endif
