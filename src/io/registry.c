/* registry.c - the drivers built into this library, by name.
 *
 * A driver file defines `const tern_driver tern_driver_<name>`. To list it,
 * add one line to DRIVERS below, under the TERN_HAVE_<NAME> macro that says
 * it is built (set by CMake for optional drivers, here for always-built
 * ones). References are strong on purpose: in a static library a weak
 * reference would not pull the driver's object file in. */
#include <string.h>

#include "io.h"

/* Built on every Linux host. */
#ifdef __linux__
#define TERN_HAVE_AFPACKET 1
#define TERN_HAVE_TAP 1
#endif

#define DRIVER(name) extern const tern_driver tern_driver_##name;
#define ENTRY(name) &tern_driver_##name,
#define NAME(name) "," #name

#define DRIVERS_MEM(X) X(mem)
#ifdef TERN_HAVE_AFPACKET
#define DRIVERS_AFPACKET(X) X(afpacket)
#else
#define DRIVERS_AFPACKET(X)
#endif
#ifdef TERN_HAVE_TAP
#define DRIVERS_TAP(X) X(tap)
#else
#define DRIVERS_TAP(X)
#endif
#ifdef TERN_HAVE_AFXDP
#define DRIVERS_AFXDP(X) X(afxdp)
#else
#define DRIVERS_AFXDP(X)
#endif
#ifdef TERN_HAVE_DPDK
#define DRIVERS_DPDK(X) X(dpdk)
#else
#define DRIVERS_DPDK(X)
#endif

#define DRIVERS(X) \
    DRIVERS_MEM(X) DRIVERS_AFPACKET(X) DRIVERS_TAP(X) DRIVERS_AFXDP(X) \
    DRIVERS_DPDK(X)

DRIVERS(DRIVER)

static const tern_driver *const drivers[] = {DRIVERS(ENTRY)};

const tern_driver *tern_driver_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(drivers) / sizeof(drivers[0]); i++)
        if (!strcmp(drivers[i]->name, name))
            return drivers[i];
    return NULL;
}

const char *tern_driver_list(void)
{
    return &DRIVERS(NAME)[1];  /* skip the leading comma */
}
