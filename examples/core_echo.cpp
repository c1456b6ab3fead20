// core_echo.cpp - the tern core from C++ (C++11 or later): the program of
// core_echo.c, written the C++ way. Two stack instances wired back to back
// in one process; the client sends 4 MiB through the echo server and
// checks every byte. Only libtern: no libtern-linux, no root.
//
//     c++ -std=c++11 core_echo.cpp $(pkg-config --cflags --libs tern) -o core_echo_cpp
//
// tern.h is a C header with extern "C" inside. Callbacks are plain
// function pointers: static member functions (or captureless lambdas)
// whose `user` argument carries the object.
#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include <tern.h>

namespace {

const unsigned kBuffers = 1024, kBufSize = 2048, kRing = 256;
const size_t kTotal = 4u << 20;

uint64_t now_ns()
{
    using namespace std::chrono;
    return (uint64_t)duration_cast<nanoseconds>(
               steady_clock::now().time_since_epoch()).count();
}

// One host: its buffers, its stack, its end of the wire.
class Host {
public:
    Host() : mem_(kBuffers * kBufSize), desc_(kBuffers), st_(nullptr),
             peer_(nullptr), stack_mem_(nullptr) {
        for (unsigned i = 0; i < kBuffers; i++) {
            std::memset(&desc_[i], 0, sizeof desc_[i]);
            desc_[i].head = &mem_[i * kBufSize];
            desc_[i].size = kBufSize;
            free_.push_back(&desc_[i]);
        }
    }
    ~Host() {
        if (st_)
            tern_stack_fini(st_);   // every buffer back before they go
        std::free(stack_mem_);
    }
    Host(const Host &) = delete;
    Host &operator=(const Host &) = delete;

    // Build the instance: cfg has identity and callbacks; we add the rest.
    bool start(tern_config &cfg, Host *peer) {
        peer_ = peer;
        cfg.buf_ops.alloc = &Host::alloc;
        cfg.buf_ops.free = &Host::release;
        cfg.buf_ops.ctx = this;
        cfg.tx = &Host::transmit;
        cfg.tx_ctx = this;
        cfg.rx_burst = kRing;
        if (getrandom(cfg.secret, sizeof cfg.secret, 0) != sizeof cfg.secret)
            return false;
        size_t size = tern_stack_size(&cfg);   // whole TERN_STACK_ALIGN lines
        if (posix_memalign(&stack_mem_, TERN_STACK_ALIGN, size) != 0)
            return false;
        int err = 0;
        st_ = tern_stack_init(stack_mem_, size, &cfg, &err);
        if (!st_)
            std::fprintf(stderr, "tern_stack_init: %s\n", tern_strerror(err));
        return st_ != nullptr;
    }

    // One round of the loop: what the wire brought, then the timers.
    void run(uint64_t now) {
        std::vector<tern_buf *> frames(ring_.begin(), ring_.end());
        ring_.clear();
        tern_input(st_, frames.data(), (unsigned)frames.size(), now);
        tern_poll(st_, now);
    }

    tern_stack *stack() const { return st_; }
    size_t free_buffers() const { return free_.size(); }

private:
    static tern_buf *alloc(void *ctx) {
        Host *h = static_cast<Host *>(ctx);
        if (h->free_.empty())
            return nullptr;
        tern_buf *b = h->free_.back();
        h->free_.pop_back();
        return tern_buf_fresh(b);
    }
    static void release(void *ctx, tern_buf *b) {
        static_cast<Host *>(ctx)->free_.push_back(b);
    }
    // The "NIC": copy each frame into the peer's buffers, drop our ref.
    static void transmit(void *ctx, tern_buf **frames, unsigned n) {
        Host *h = static_cast<Host *>(ctx);
        for (unsigned i = 0; i < n; i++) {
            Host *to = h->peer_;
            tern_buf *copy = to->ring_.size() < kRing ? alloc(to) : nullptr;
            if (copy) {
                std::memcpy(copy->data, frames[i]->data, frames[i]->len);
                copy->len = frames[i]->len;
                to->ring_.push_back(copy);
            }
            tern_buf_release(h->st_, frames[i]);
        }
    }

    std::vector<uint8_t> mem_;
    std::vector<tern_buf> desc_;
    std::vector<tern_buf *> free_;
    std::deque<tern_buf *> ring_;
    tern_stack *st_;
    Host *peer_;
    void *stack_mem_;
};

// The echo server's connection: what tern_tcp_send did not take yet.
struct Echo {
    std::vector<uint8_t> pending;
    bool closing = false;

    void flush(tern_stack *st, tern_conn *c) {
        long sent = pending.empty() ? 0
                    : tern_tcp_send(st, c, pending.data(), pending.size());
        if (sent > 0) {
            pending.erase(pending.begin(), pending.begin() + sent);
            tern_tcp_consumed(st, c, (size_t)sent);   // window reopens
        }
        if (closing && pending.empty())
            tern_tcp_close(st, c);
    }
};

tern_callbacks server_callbacks()
{
    tern_callbacks cb;
    std::memset(&cb, 0, sizeof cb);
    cb.accepted = [](tern_stack *, tern_conn *, void *) -> void * {
        return new Echo;
    };
    cb.recv = [](tern_stack *st, tern_conn *c, void *user, tern_buf *,
                 const uint8_t *data, size_t len) -> size_t {
        Echo *e = static_cast<Echo *>(user);
        long sent = e->pending.empty() ? tern_tcp_send(st, c, data, len) : 0;
        if (sent < 0)
            sent = 0;
        e->pending.insert(e->pending.end(), data + sent, data + len);
        return (size_t)sent;   // the rest: tern_tcp_consumed in flush
    };
    cb.acked = [](tern_stack *st, tern_conn *c, void *user, size_t) {
        static_cast<Echo *>(user)->flush(st, c);
    };
    cb.peer_closed = [](tern_stack *st, tern_conn *c, void *user) {
        static_cast<Echo *>(user)->closing = true;
        static_cast<Echo *>(user)->flush(st, c);
    };
    cb.closed = [](tern_stack *, tern_conn *, void *user, int) {
        delete static_cast<Echo *>(user);
    };
    return cb;
}

// The client: a known pattern out, the same back.
struct Client {
    size_t sent = 0, received = 0, bad = 0;

    static uint8_t pattern(size_t i) { return (uint8_t)(i * 7 + (i >> 11)); }

    void push(tern_stack *st, tern_conn *c) {
        uint8_t chunk[16384];
        while (sent < kTotal) {
            size_t n = std::min(sizeof chunk, kTotal - sent);
            for (size_t i = 0; i < n; i++)
                chunk[i] = pattern(sent + i);
            long took = tern_tcp_send(st, c, chunk, n);
            if (took <= 0)
                return;   // full: acked calls again
            sent += (size_t)took;
        }
    }
};

tern_callbacks client_callbacks()
{
    tern_callbacks cb;
    std::memset(&cb, 0, sizeof cb);
    cb.connected = [](tern_stack *st, tern_conn *c, void *user) {
        static_cast<Client *>(user)->push(st, c);
    };
    cb.acked = [](tern_stack *st, tern_conn *c, void *user, size_t) {
        static_cast<Client *>(user)->push(st, c);
    };
    cb.recv = [](tern_stack *st, tern_conn *c, void *user, tern_buf *,
                 const uint8_t *data, size_t len) -> size_t {
        Client *k = static_cast<Client *>(user);
        for (size_t i = 0; i < len; i++)
            k->bad += data[i] != Client::pattern(k->received + i);
        k->received += len;
        if (k->received == kTotal)
            tern_tcp_close(st, c);
        return len;
    };
    return cb;
}

tern_config host_config(uint32_t ip, uint8_t last_mac_byte)
{
    tern_config cfg;
    tern_config_defaults(&cfg);
    cfg.ip = ip;
    cfg.prefix_len = 24;
    const uint8_t mac[6] = {0x02, 0, 0, 0, 0, last_mac_byte};
    std::memcpy(cfg.mac, mac, sizeof mac);
    return cfg;
}

}  // namespace

int main()
{
    Host server, client;
    Client k;

    tern_config s = host_config(TERN_IP4(198, 18, 0, 1), 1);
    s.rcv_buf = 65536;
    s.snd_buf = 16384;   // small, so short sends happen
    s.cb = server_callbacks();
    tern_config c = host_config(TERN_IP4(198, 18, 0, 2), 2);
    c.cb = client_callbacks();
    if (!server.start(s, &client) || !client.start(c, &server))
        return 1;
    const tern_addr server_ip = tern_addr_v4(TERN_IP4(198, 18, 0, 1));
    int err = tern_tcp_listen(server.stack(), 7, nullptr);
    if (err == 0 &&
        !tern_tcp_connect(client.stack(), &server_ip, 7, 0, &k, &err))
        err = err ? err : TERN_EINVAL;
    if (err) {
        std::fprintf(stderr, "core_echo_cpp: %s\n", tern_strerror(err));
        return 1;
    }
    tern_flush(client.stack());   // the SYN's ARP request: made outside a callback

    // Bounded by rounds, not by time: the transfer needs a few hundred.
    unsigned round = 0;
    while (++round < 1000000 &&
           (k.received < kTotal || tern_tcp_conn_count(server.stack()) != 0)) {
        uint64_t now = now_ns();
        server.run(now);
        client.run(now);
    }
    bool closed = tern_tcp_conn_count(server.stack()) == 0;
    std::printf("core_echo_cpp: %zu of %zu bytes echoed in %u rounds, "
                "%zu wrong, %s\n", k.received, kTotal, round, k.bad,
                closed ? "closed" : "not closed");
    return k.received == kTotal && k.bad == 0 && closed ? 0 : 1;
}
