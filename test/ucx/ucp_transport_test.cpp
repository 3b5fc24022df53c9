// ucp_transport_test.cpp - the UCX operations the ucx device rests on, between two forked processes, over UCX's tcp and over its shared-memory
// transports (UCX_TLS, set in each process before ucp_init): the ordering
// that makes a PIO store / completion flag trustworthy (the last word after
// the rest), remote atomic adds (counters), announced tagged rows (large DMA
// rows), and bounded waits on a dead peer.
// Worker addresses and packed keys travel over a socketpair (the device uses
// the launcher's key-value store: ucx/pmix_exchange.hpp).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ucx/ucp_transport.hpp"

namespace tca::ucx {
namespace {

using clock_type = std::chrono::steady_clock;

Deadline in_seconds(int s) {
    return clock_type::now() + std::chrono::seconds(s);
}

bool send_blob(int fd, const void *p, uint64_t n) {
    if (write(fd, &n, sizeof n) != static_cast<ssize_t>(sizeof n))
        return false;
    const auto *b = static_cast<const char *>(p);
    while (n > 0) {
        const ssize_t w = write(fd, b, n);
        if (w <= 0)
            return false;
        b += w;
        n -= static_cast<uint64_t>(w);
    }
    return true;
}
bool send_blob(int fd, const std::vector<std::byte> &v) {
    return send_blob(fd, v.data(), v.size());
}

bool recv_blob(int fd, std::vector<std::byte> *v) {
    uint64_t n = 0;
    if (read(fd, &n, sizeof n) != static_cast<ssize_t>(sizeof n) || n > (1u << 20))
        return false;
    v->resize(n);
    auto *b = reinterpret_cast<char *>(v->data());
    while (n > 0) {
        const ssize_t r = read(fd, b, n);
        if (r <= 0)
            return false;
        b += r;
        n -= static_cast<uint64_t>(r);
    }
    return true;
}

// Waits until fd is readable, progressing the worker meanwhile: over tcp a
// peer's flush completes only while this side progresses.
bool wait_readable(int fd, Worker &w) {
    const auto until = clock_type::now() + std::chrono::seconds(30);
    while (clock_type::now() < until) {
        struct timeval tv {
            0, 1000
        };
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(fd, &fds);
        w.progress();
        if (select(fd + 1, &fds, nullptr, nullptr, &tv) == 1)
            return true;
    }
    return false;
}

// Over UCX's shared-memory transports an endpoint cannot report a peer's
// failure (UCX 1.13: "no peer failure handler"), so only tcp asks for it.
bool reports_peer_failure(const char *tls) {
    return std::string(tls) == "tcp";
}

// Both sides: context, worker, endpoint to the other, after swapping addresses.
struct Side {
    std::unique_ptr<Context> ctx;
    std::unique_ptr<Worker> worker;
    std::unique_ptr<Endpoint> ep;
    std::vector<std::byte> peer_address;
    std::string why;
    Result start(int fd) {
        if (Result r = Context::create(&ctx, &why); r != tcaSuccess)
            return r;
        if (Result r = Worker::create(*ctx, &worker, &why); r != tcaSuccess)
            return r;
        std::vector<std::byte> peer;
        if (!send_blob(fd, worker->address()) || !recv_blob(fd, &peer))
            return tcaErrorSystem;
        peer_address = peer;
        return Endpoint::create(*worker, peer, reports_peer_failure(getenv("UCX_TLS")), &ep);
    }
    // Target: opens [addr, addr+size) to the peer and sends it base and key.
    std::unique_ptr<MemoryMap> map;
    bool open_window(int fd, void *addr, size_t size) {
        if (MemoryMap::create(*ctx, addr, size, &map) != tcaSuccess)
            return false;
        const uint64_t b = map->base();
        return send_blob(fd, &b, sizeof b) && send_blob(fd, map->packed_key());
    }
    // Origin: receives the target's window (remote_base, key).
    uint64_t remote_base = 0;
    std::unique_ptr<RemoteKey> key;
    bool connect_window(int fd) {
        std::vector<std::byte> base_blob, key_blob;
        if (!recv_blob(fd, &base_blob) || !recv_blob(fd, &key_blob) ||
            base_blob.size() != sizeof remote_base)
            return false;
        std::memcpy(&remote_base, base_blob.data(), sizeof remote_base);
        return RemoteKey::create(*ep, key_blob, &key) == tcaSuccess;
    }
    // Waits for the other side's one-byte signal on fd, progressing meanwhile.
    bool await_byte(int fd) {
        char c;
        return wait_readable(fd, *worker) && read(fd, &c, 1) == 1;
    }
    ~Side() {
        ep.reset();
        map.reset();
    }
};

// In the child: report and exit non-zero.
#define CHILD_CHECK(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "child check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
            std::_Exit(1);                                                                         \
        }                                                                                          \
    } while (0)

// Runs target(fd) in a forked child with UCX_TLS=tls and origin(fd) here
// (also with UCX_TLS=tls, restored after); returns the child's wait status.
template <class Target, class Origin>
int run_pair(const char *tls, Target target, Origin origin) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -1;
    const char *old = getenv("UCX_TLS");
    const std::string saved = old ? old : "";
    setenv("UCX_TLS", tls, 1);
    setenv("UCX_NET_DEVICES", "all", 1);
    const pid_t child = fork();
    if (child == 0) {
        close(sv[0]);
        alarm(60);  // a hang ends the child
        std::_Exit(target(sv[1]));
    }
    close(sv[1]);
    origin(sv[0], child);
    close(sv[0]);
    if (old)
        setenv("UCX_TLS", saved.c_str(), 1);
    else
        unsetenv("UCX_TLS");
    int st = 0;
    waitpid(child, &st, 0);
    return st;
}

class UcpTransport : public ::testing::TestWithParam<const char *> {};

// The origin writes 1 MiB rounds with put_last_word_after; the target sees the
// round number in the last word only once every byte before it is that
// round's.  On UCX's tcp and shared-memory transports (one lane per endpoint)
// this also holds with the fence taken out (tried: the test still passes), so
// here it checks the property, not the fence; the fence is for transports
// that spread one endpoint's puts over several lanes (multi-rail RDMA).
TEST_P(UcpTransport, TheLastWordArrivesAfterTheRest) {
    constexpr size_t kSize = (1u << 20) + 8;
    constexpr int kRounds = 60;
    const int st = run_pair(
        GetParam(),
        [](int fd) {
            Side s;
            CHILD_CHECK(s.start(fd) == tcaSuccess);
            std::vector<uint64_t> buf(kSize / 8, 0);
            CHILD_CHECK(s.open_window(fd, buf.data(), kSize));
            volatile uint64_t *last = &buf[kSize / 8 - 1];
            for (uint64_t round = 1; round <= kRounds; ++round) {
                const auto until = in_seconds(30);
                while (*last != round) {
                    s.worker->progress();
                    CHILD_CHECK(clock_type::now() < until);
                }
                std::atomic_thread_fence(std::memory_order_acquire);
                for (size_t i = 0; i + 1 < buf.size(); ++i)
                    if (buf[i] != (round << 32 | i)) {
                        std::fprintf(stderr, "round %llu: word %zu is %llx\n",
                                     (unsigned long long) round, i, (unsigned long long) buf[i]);
                        std::_Exit(2);
                    }
                CHILD_CHECK(write(fd, "k", 1) == 1);  // the origin may write the next round
            }
            CHILD_CHECK(s.await_byte(fd));  // the origin is done
            return 0;
        },
        [&](int fd, pid_t) {
            Side s;
            ASSERT_EQ(s.start(fd), tcaSuccess) << s.why;
            ASSERT_TRUE(s.connect_window(fd));
            const uint64_t base = s.remote_base;
            const RemoteKey &key = *s.key;
            std::vector<uint64_t> src(kSize / 8);
            for (uint64_t round = 1; round <= kRounds; ++round) {
                for (size_t i = 0; i + 1 < src.size(); ++i)
                    src[i] = round << 32 | i;
                src.back() = round;
                ASSERT_EQ(s.ep->put_last_word_after(src.data(), kSize, base, key, in_seconds(30)),
                          tcaSuccess);
                ASSERT_TRUE(s.await_byte(fd));  // the target's ack
            }
            ASSERT_EQ(s.ep->flush(in_seconds(10)), tcaSuccess);
            ASSERT_EQ(write(fd, "d", 1), 1);
        });
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "target status " << st;
}

// 2000 remote adds of 3 to the target's counter: it reads 6000.
TEST_P(UcpTransport, RemoteAtomicAddsAllLand) {
    const int st = run_pair(
        GetParam(),
        [](int fd) {
            Side s;
            CHILD_CHECK(s.start(fd) == tcaSuccess);
            alignas(64) static uint64_t counter = 0;
            CHILD_CHECK(s.open_window(fd, &counter, sizeof counter));
            const auto until = in_seconds(30);
            while (__atomic_load_n(&counter, __ATOMIC_ACQUIRE) != 6000) {
                s.worker->progress();
                CHILD_CHECK(clock_type::now() < until);
            }
            CHILD_CHECK(write(fd, "k", 1) == 1);
            CHILD_CHECK(s.await_byte(fd));
            return 0;
        },
        [&](int fd, pid_t) {
            Side s;
            ASSERT_EQ(s.start(fd), tcaSuccess) << s.why;
            ASSERT_TRUE(s.connect_window(fd));
            const uint64_t base = s.remote_base;
            const RemoteKey &key = *s.key;
            for (int i = 0; i < 2000; ++i)
                ASSERT_EQ(s.ep->atomic_add(3, base, key, in_seconds(30)), tcaSuccess);
            ASSERT_TRUE(s.await_byte(fd));
            ASSERT_EQ(s.ep->flush(in_seconds(10)),
                      tcaSuccess);  // nothing pending when the target goes
            ASSERT_EQ(write(fd, "d", 1), 1);
        });
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "target status " << st;
}

// The target is SIGKILLed: a put or a flush to it fails, within its deadline.
TEST_P(UcpTransport, ADeadPeerFailsAPutInBoundedTime) {
    if (!reports_peer_failure(GetParam()))
        GTEST_SKIP() << "UCX's shared-memory transports report no peer failure (the backend checks "
                        "node state there)";
    const int st = run_pair(
        GetParam(),
        [](int fd) {
            Side s;
            CHILD_CHECK(s.start(fd) == tcaSuccess);
            static uint64_t word[512];
            CHILD_CHECK(s.open_window(fd, word, sizeof word));
            for (;;)
                s.worker->progress();  // until killed
            return 0;
        },
        [&](int fd, pid_t child) {
            Side s;
            ASSERT_EQ(s.start(fd), tcaSuccess) << s.why;
            ASSERT_TRUE(s.connect_window(fd));
            const uint64_t base = s.remote_base;
            const RemoteKey &key = *s.key;
            uint64_t v[512] = {1};
            ASSERT_EQ(s.ep->put(v, sizeof v, base, key, in_seconds(10)),
                      tcaSuccess);  // alive: lands
            ASSERT_EQ(s.ep->flush(in_seconds(10)), tcaSuccess);
            kill(child, SIGKILL);
            siginfo_t si{};
            waitid(P_PID, child, &si, WEXITED | WNOWAIT);  // dead, and still run_pair's to reap
            const auto t0 = clock_type::now();
            Result r = tcaSuccess;
            for (int i = 0; i < 20 && r == tcaSuccess; ++i) {
                r = s.ep->put(v, sizeof v, base, key, in_seconds(3));
                if (r == tcaSuccess)
                    r = s.ep->flush(in_seconds(3));
            }
            const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
            EXPECT_LT(secs, 10.0);
            EXPECT_NE(r, tcaSuccess) << "every put to a dead peer succeeded";
            EXPECT_TRUE(s.ep->peer_failed());
            EXPECT_EQ(s.ep->put(v, sizeof v, base, key, in_seconds(3)), tcaErrorPeerGone);
        });
    EXPECT_TRUE(WIFSIGNALED(st)) << "target status " << st;
}

// An endpoint to a worker that is gone (its process exited; or, as seen under
// stress, the interface its address names went down): a named error from the
// create or from the first operation, never a crash - a failed create once
// closed an endpoint it never had.
TEST_P(UcpTransport, AnEndpointToAGoneWorkerFailsByName) {
    if (!reports_peer_failure(GetParam()))
        GTEST_SKIP() << "UCX's shared-memory transports report no peer failure (the backend checks "
                        "node state there)";
    const int st = run_pair(
        GetParam(),
        [](int fd) {
            std::unique_ptr<Context> ctx;
            std::unique_ptr<Worker> worker;
            std::string why;
            CHILD_CHECK(Context::create(&ctx, &why) == tcaSuccess);
            CHILD_CHECK(Worker::create(*ctx, &worker, &why) == tcaSuccess);
            CHILD_CHECK(send_blob(fd, worker->address()));
            char go = 0;
            CHILD_CHECK(read(fd, &go, 1) == 1);
            return 0;  // gone: its sockets close with it
        },
        [&](int fd, pid_t child) {
            // Our worker listens before the child's goes away: it cannot be
            // given the gone worker's port (an endpoint to "gone" would then
            // reach ourselves, and UCX 1.13 crashes on an active message
            // with no handler - one CI run did).
            std::unique_ptr<Context> ctx;
            std::unique_ptr<Worker> worker;
            std::string why;
            ASSERT_EQ(Context::create(&ctx, &why), tcaSuccess) << why;
            ASSERT_EQ(Worker::create(*ctx, &worker, &why), tcaSuccess) << why;
            std::vector<std::byte> gone;
            ASSERT_TRUE(recv_blob(fd, &gone));
            const char go = 1;
            ASSERT_EQ(write(fd, &go, 1), 1);
            siginfo_t si{};
            waitid(P_PID, child, &si, WEXITED | WNOWAIT);
            std::unique_ptr<Endpoint> ep;
            const Result made = Endpoint::create(*worker, gone, true, &ep);
            if (made != tcaSuccess) {
                EXPECT_EQ(ep, nullptr);
                return;
            }
            const uint64_t word = 1;
            Result r = ep->am_send(21, &word, sizeof word,
                                   in_seconds(5));  // an id nobody handles: nobody is there
            if (r == tcaSuccess)
                r = ep->flush(in_seconds(5));
            EXPECT_NE(r, tcaSuccess) << "a message to a gone worker was delivered";
            ep.reset();
        });
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
}

// Rows announced by an active message and sent tagged on a second endpoint
// without failure reports (the ucx device's large DMA rows): each lands where
// the target's handler says, whole once the synchronous send returned, eager
// (16 KiB) and by rendezvous (1 MiB); a refused one is drained into nothing,
// so the sender is let go and the target's memory stays as it was.
struct RowAnnounce {
    uint64_t tag, off, size;
    int32_t refuse, pad;
};
std::vector<unsigned char> *g_rows;  // the child's target memory
Result on_row(void *, const void *header, size_t length, Worker::TagReceive *into) {
    RowAnnounce a;
    if (length != sizeof a)
        return tcaErrorInvalidValue;
    std::memcpy(&a, header, sizeof a);
    into->tag = a.tag;
    if (a.refuse || a.off + a.size > g_rows->size())
        return tcaErrorNotRegistered;
    into->to = g_rows->data() + a.off;
    into->size = a.size;
    return tcaSuccess;
}
unsigned char row_byte(int round, size_t i) {
    return static_cast<unsigned char>(i * 13 + round * 7 + 1);
}
constexpr unsigned kRowAm = 20;
constexpr size_t kRowsSize = 2u << 20;

TEST_P(UcpTransport, AnnouncedTaggedRowsLandWhereTheTargetSays) {
    const size_t sizes[] = {16384, 1u << 20, 1u << 20, 16384};
    const int st = run_pair(
        GetParam(),
        [&](int fd) {
            Side s;
            CHILD_CHECK(s.start(fd) == tcaSuccess);
            std::vector<unsigned char> rows(kRowsSize, 0);
            g_rows = &rows;
            CHILD_CHECK(s.worker->set_am_tag_handler(kRowAm, on_row, nullptr) == tcaSuccess);
            CHILD_CHECK(write(fd, "r", 1) == 1);  // the handler is in place
            for (int round = 0; round < 4; ++round) {
                CHILD_CHECK(s.await_byte(fd));  // the send returned
                const size_t off = round % 2 ? 4096 : 0;
                if (round == 3) {  // refused: nothing written
                    for (size_t i = 0; i < kRowsSize; ++i)
                        CHILD_CHECK(rows[i] == 0);
                } else {
                    for (size_t i = 0; i < sizes[round]; ++i)
                        CHILD_CHECK(rows[off + i] == row_byte(round, i));
                }
                std::fill(rows.begin(), rows.end(), 0);
                CHILD_CHECK(write(fd, "k", 1) == 1);
            }
            CHILD_CHECK(s.await_byte(fd));  // the origin is done
            return 0;
        },
        [&](int fd, pid_t) {
            Side s;
            ASSERT_EQ(s.start(fd), tcaSuccess) << s.why;
            ASSERT_TRUE(s.await_byte(fd));
            // The second endpoint to the same worker, as the device's bulk one.
            std::unique_ptr<Endpoint> bulk;
            ASSERT_EQ(Endpoint::create(*s.worker, s.peer_address, false, &bulk), tcaSuccess);
            bulk->follow_failures_of(*s.ep);
            std::vector<unsigned char> src(kRowsSize);
            for (int round = 0; round < 4; ++round) {
                for (size_t i = 0; i < sizes[round]; ++i)
                    src[i] = row_byte(round, i);
                const RowAnnounce a{1000u + static_cast<uint64_t>(round), round % 2 ? 4096u : 0u,
                                    sizes[round], round == 3, 0};
                ASSERT_EQ(s.ep->am_send(kRowAm, &a, sizeof a, in_seconds(10)), tcaSuccess);
                ASSERT_EQ(bulk->tag_send(src.data(), sizes[round], a.tag, in_seconds(10)),
                          tcaSuccess)
                    << "round " << round;
                ASSERT_EQ(write(fd, "s", 1), 1);
                ASSERT_TRUE(s.await_byte(fd));  // the target checked
            }
            ASSERT_EQ(bulk->flush(in_seconds(10)), tcaSuccess);
            bulk.reset();
            ASSERT_EQ(write(fd, "d", 1), 1);
        });
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "target status " << st;
}

INSTANTIATE_TEST_SUITE_P(Tls, UcpTransport, ::testing::Values("tcp", "sm"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                             return std::string(i.param);
                         });

}  // namespace
}  // namespace tca::ucx
