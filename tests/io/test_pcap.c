/* test_pcap.c - the pcap writer's file format, and captures of a mem link
 * read back by tcpdump (skipped if tcpdump is not installed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link_util.h"
#include "pcap.h"

static char *tmp_path(void)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/tern_pcap_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    return path;
}

static bool have_tcpdump(void)
{
    return system("command -v tcpdump >/dev/null 2>&1") == 0;
}

/* tcpdump's one-line summaries of a file, in out; returns the line count
 * or -1 when tcpdump failed to read it. */
static int tcpdump_lines(const char *path, char *out, size_t outlen)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "tcpdump -nn -r %s 2>/dev/null; echo rc=$?", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = 0;
    pclose(p);
    if (!strstr(out, "rc=0"))
        return -1;
    int lines = 0;
    for (char *s = out; (s = strchr(s, '\n')); s++)
        lines++;
    return lines - 1;  /* the rc= line */
}

static void file_format(void **state)
{
    (void)state;
    char *path = tmp_path(), err[128];
    tern_pcap *pc = tern_pcap_open(path, err, sizeof(err));
    assert_non_null(pc);
    uint8_t f[200];
    size_t n = f_udp(f, 100, 1, false);
    /* One flat frame and one chain of three segments. */
    tern_buf c3 = {.data = f + 100, .len = (uint32_t)n - 100};
    tern_buf c2 = {.data = f + 30, .len = 70, .frag = &c3};
    tern_buf c1 = {.data = f, .len = 30, .frag = &c2};
    assert_int_equal(tern_pcap_write_bytes(pc, f, (uint32_t)n, 1500000000123456789ull), 0);
    assert_int_equal(tern_pcap_write(pc, &c1, 2000000000ull), 0);
    assert_int_equal(tern_pcap_frames(pc), 2);
    tern_pcap_close(pc);

    FILE *fp = fopen(path, "rb");
    uint8_t raw[1024];
    size_t got = fread(raw, 1, sizeof(raw), fp);
    fclose(fp);
    assert_int_equal(got, 24 + 2 * (16 + n));
    uint32_t w[6];
    memcpy(w, raw, 24);
    assert_int_equal(w[0], 0xa1b23c4d);  /* nanosecond magic, host order */
    assert_int_equal(w[5], 1);           /* LINKTYPE_ETHERNET */
    uint32_t rec[4];
    memcpy(rec, raw + 24, 16);
    assert_int_equal(rec[0], 1500000000);
    assert_int_equal(rec[1], 123456789);
    assert_int_equal(rec[2], n);
    assert_int_equal(rec[3], n);
    assert_memory_equal(raw + 40, f, n);
    memcpy(rec, raw + 40 + n, 16);
    assert_int_equal(rec[0], 2);
    assert_int_equal(rec[1], 0);
    assert_memory_equal(raw + 56 + n, f, n);  /* the chain, flattened */

    if (have_tcpdump()) {
        char out[4096];
        assert_int_equal(tcpdump_lines(path, out, sizeof(out)), 2);
        assert_non_null(strstr(out, "198.18.0.1.5000 > 198.18.0.2.7: UDP"));
    }
    unlink(path);
}

static void link_capture_read_by_tcpdump(void **state)
{
    (void)state;
    if (!have_tcpdump()) {
        fprintf(stderr, "tcpdump not installed: skipping\n");
        skip();
    }
    tern_memlink_config c;
    tern_memlink_config_defaults(&c);
    c.pool_size = 32;
    c.faults.dup = 1.0;  /* the capture shows frames as delivered */
    tern_memlink *l = link_new(&c);
    char *path = tmp_path(), err[128];
    char saved[64];
    snprintf(saved, sizeof(saved), "%s", path);
    assert_int_equal(tern_memlink_set_pcap(l, 0, saved, err, sizeof(err)), 0);
    /* One file for both directions through a shared writer. */
    char *path2 = tmp_path();
    tern_pcap *both = tern_pcap_open(path2, err, sizeof(err));
    assert_non_null(both);
    tern_memlink_set_time(l, 1000000000ull);
    uint8_t f[1600];
    tern_buf *r[4];
    for (int i = 0; i < 5; i++) {
        size_t n = i & 1 ? f_tcp(f, 10 * (size_t)i, (uint32_t)i, 0x18, 0, 1, false)
                         : f_udp(f, 1000, (uint32_t)i, false);
        send_bytes(l, 0, f, n);
        unsigned k = tern_memlink_rx(l, 1, r, 4, 1000000000ull);
        assert_int_equal(k, 2);
        release(l, 1, r[0]);
        release(l, 1, r[1]);
    }
    assert_int_equal(tern_memlink_set_pcap(l, 0, NULL, err, sizeof(err)), 0);

    tern_memlink_faults none = {0};
    tern_memlink_set_faults(l, 0, &none);
    tern_memlink_set_faults(l, 1, &none);
    tern_memlink_attach_pcap(l, 0, both);
    tern_memlink_attach_pcap(l, 1, both);
    size_t n = f_udp(f, 64, 9, false);
    send_bytes(l, 0, f, n);
    send_bytes(l, 1, f, n);
    release(l, 1, recv_one(l, 1, 0));
    release(l, 0, recv_one(l, 0, 0));
    tern_memlink_attach_pcap(l, 0, NULL);
    tern_memlink_attach_pcap(l, 1, NULL);
    tern_pcap_close(both);
    assert_pools_full(l);
    tern_memlink_destroy(l);

    char out[8192];
    assert_int_equal(tcpdump_lines(saved, out, sizeof(out)), 10);
    assert_non_null(strstr(out, "UDP, length 1000"));
    assert_non_null(strstr(out, "198.18.0.1.40000 > 198.18.0.2.80: Flags [P.]"));
    assert_int_equal(tcpdump_lines(path2, out, sizeof(out)), 2);
    unlink(saved);
    unlink(path2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(file_format),
        cmocka_unit_test(link_capture_read_by_tcpdump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
