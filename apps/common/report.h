/* report.h - one result printer for every program: aligned "key value"
 * lines for people, or ONE JSON object on one line (--json) for scripts.
 * Keys are the same in both forms, so kern-* and tern-* twins compare
 * field by field. */
#ifndef APPS_REPORT_H
#define APPS_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct report {
    FILE *f;
    bool json;
    int depth;        /* nesting of objects */
    bool first[4];    /* no comma needed yet at this depth */
} report;

void rep_begin(report *r, FILE *f, bool json, const char *prog);
void rep_str(report *r, const char *key, const char *v);
void rep_u64(report *r, const char *key, uint64_t v);
void rep_f(report *r, const char *key, double v, int decimals);
void rep_bool(report *r, const char *key, bool v);
/* A nested object (e.g. "counters"); text mode indents its lines. */
void rep_obj_begin(report *r, const char *key);
void rep_obj_end(report *r);
void rep_end(report *r);

#endif
