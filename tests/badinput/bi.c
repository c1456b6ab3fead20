/* bi.c - see bi.h. */
#include "bi.h"

#include <stdio.h>
#include <stdlib.h>

static size_t received;

static void *on_accepted(tern_stack *st, tern_conn *c, void *lu)
{
    (void)st; (void)c;
    return lu;
}

size_t bi_echo_recv(tern_stack *st, tern_conn *c, void *u, tern_buf *b,
                    const uint8_t *d, size_t len)
{
    (void)u; (void)b;
    received += len;
    tern_tcp_send(st, c, d, len);
    return len;
}

static void (*user_tweak)(tern_config *cfg);

static void base_cfg(tern_config *c)
{
    c->cb.accepted = on_accepted;
    c->cb.recv = bi_echo_recv;
    c->max_half_open = 16;
    if (user_tweak)
        user_tweak(c);
}

th *bi_new_with(void (*tweak)(tern_config *cfg))
{
    user_tweak = tweak;
    th *t = th_new(base_cfg);
    user_tweak = NULL;
    received = 0;
    tern_tcp_listen(t->st, 80, NULL);
    tern_udp_bind(t->st, 53, NULL, NULL);
    tp_arp(t);
    th_clear(t);
    return t;
}

th *bi_new(void) { return bi_new_with(NULL); }

size_t bi_received(void) { return received; }

void bi_connect(th *t, peer *p, uint16_t port)
{
    memset(p, 0, sizeof *p);
    p->t = t;
    p->seq = 1000000u + port;
    p->ts = true;
    p->tsval = 5000;
    peer_connect(p, 80, port);
    th_clear(t);
}

void bi_feed(th *t, const uint8_t *f, size_t n) { th_input(t, f, n); }

void bi_healthy_and_free(th *t)
{
    for (unsigned i = 0; i < t->nout; i++)
        assert_true(th_frame_csums_ok(t->out[i], t->out_len[i]));
    th_clear(t);
    static uint16_t port = 61000;
    peer p;
    bi_connect(t, &p, port++);
    size_t before = received;
    peer_send(&p, F_ACK | F_PSH, "healthy?", 8);
    assert_int_equal(received - before, 8);
    tpkt s;
    bool echoed = false;
    for (unsigned i = 0; i < tp_count(t); i++)
        if (tp_get(t, (int)i, &s) && s.len == 8 && !memcmp(s.data, "healthy?", 8))
            echoed = s.csum_ok;
    assert_true(echoed);
    assert_int_equal(th_free(t), 0);
}

int bi_main(int argc, char **argv, const char *group, const bi_case *cases,
            size_t n)
{
    if (argc > 1 && !strcmp(argv[1], "--markdown")) {
        for (size_t i = 0; i < n; i++)
            printf("| %s | %s | %s | %s |\n", group, cases[i].name,
                   cases[i].input, cases[i].required);
        return 0;
    }
    struct CMUnitTest *tests = calloc(n, sizeof *tests);
    for (size_t i = 0; i < n; i++) {
        tests[i].name = cases[i].name;
        tests[i].test_func = cases[i].run;
    }
    int rc = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
    free(tests);
    return rc;
}
