/* report.c - text or JSON result printing (see report.h). */
#include "report.h"

#include <math.h>

static void key(report *r, const char *k)
{
    if (r->json) {
        fprintf(r->f, "%s\"%s\":", r->first[r->depth] ? "" : ",", k);
        r->first[r->depth] = false;
    } else {
        fprintf(r->f, "%*s%-22s ", 2 * r->depth + 2, "", k);
    }
}

static void eol(report *r)
{
    if (!r->json)
        fputc('\n', r->f);
}

void rep_begin(report *r, FILE *f, bool json, const char *prog)
{
    r->f = f;
    r->json = json;
    r->depth = 0;
    r->first[0] = true;
    if (json) {
        fputc('{', f);
        rep_str(r, "program", prog);
    } else {
        fprintf(f, "%s\n", prog);
    }
}

void rep_str(report *r, const char *k, const char *v)
{
    key(r, k);
    if (!r->json) {
        fprintf(r->f, "%s", v);
    } else {
        fputc('"', r->f);
        for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
            if (*p == '"' || *p == '\\')
                fprintf(r->f, "\\%c", *p);
            else if (*p < 0x20)
                fprintf(r->f, "\\u%04x", *p);
            else
                fputc(*p, r->f);
        }
        fputc('"', r->f);
    }
    eol(r);
}

void rep_u64(report *r, const char *k, uint64_t v)
{
    key(r, k);
    fprintf(r->f, "%llu", (unsigned long long)v);
    eol(r);
}

void rep_f(report *r, const char *k, double v, int decimals)
{
    key(r, k);
    if (!isfinite(v))
        v = 0;
    fprintf(r->f, "%.*f", decimals, v);
    eol(r);
}

void rep_bool(report *r, const char *k, bool v)
{
    key(r, k);
    fprintf(r->f, "%s", v ? "true" : "false");
    eol(r);
}

void rep_obj_begin(report *r, const char *k)
{
    key(r, k);
    if (r->json)
        fputc('{', r->f);
    else
        fputc('\n', r->f);
    if (r->depth < 3)
        r->depth++;
    r->first[r->depth] = true;
}

void rep_obj_end(report *r)
{
    if (r->json)
        fputc('}', r->f);
    if (r->depth > 0)
        r->depth--;
}

void rep_end(report *r)
{
    if (r->json)
        fputs("}\n", r->f);
    fflush(r->f);
}
