/* clock.h - monotonic nanoseconds; programs read it once per loop
 * iteration, never per request. */
#ifndef APPS_CLOCK_H
#define APPS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
