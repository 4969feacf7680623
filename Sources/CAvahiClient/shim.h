#ifndef CHIRP_CAVAHICLIENT_SHIM_H
#define CHIRP_CAVAHICLIENT_SHIM_H
// Avahi's own client library (pkg-config avahi-client), used on Linux by Chirp's native discovery backend: one
// D-Bus connection per process, whatever the number of browses, resolves and registrations.
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
