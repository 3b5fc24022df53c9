// The TCA session's progress engine (session/progress_engine.h): one thread
// for every client, started by the first and stopped by the last; a leave
// waits for a running poll; a leave from inside a poll; a raise wakes it;
// clients coming and going from several threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <dirent.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "session/progress_engine.h"
#include "tca.h"

namespace {

using namespace std::chrono_literals;

int threads_of_process() {
    int n = 0;
    if (DIR *d = opendir("/proc/self/task")) {
        while (dirent *e = readdir(d))
            n += e->d_name[0] != '.';
        closedir(d);
    }
    return n;
}

// 5 s: sanitizer builds and loaded machines run slowly; the waits that must
// come from a raise or a wake are told from the engine's own end of a sleep
// (10 s at most) all the same.
template <class F>
bool eventually(F &&cond, std::chrono::milliseconds limit = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!cond() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    return cond();
}

struct Counting {
    std::atomic<int> polls{0};
    std::atomic<bool> in_poll{false};
    std::chrono::milliseconds hold{0};
    int64_t idle = 100000;
    std::atomic<bool> listening{true};
    std::atomic<tca_progress_client_t *> self{
        nullptr};  // set after join returns: a poll may come first
    bool leave_inside = false;

    tca_progress_hooks_t hooks() {
        return {[](void *c) {
                    auto *s = static_cast<Counting *>(c);
                    s->in_poll.store(true);
                    s->polls.fetch_add(1);
                    if (s->hold.count() > 0)
                        std::this_thread::sleep_for(s->hold);
                    if (s->leave_inside && s->self.load() != nullptr)
                        tca_progress_leave(s->self.load());
                    s->in_poll.store(false);
                    return 0;
                },
                [](void *c) { return static_cast<Counting *>(c)->idle; }, this,
                [](void *c) { return static_cast<Counting *>(c)->listening.load() ? 1 : 0; }};
    }
};

class Engine : public ::testing::Test {
protected:
    void SetUp() override {
        key_ = "progress-" + std::to_string(getpid());
        const tcaInitParams params{key_.c_str(), 0, 1};
        ASSERT_EQ(tcaInitWithParams(&params), tcaSuccess);
        ASSERT_EQ(tca_progress_clients(), 0);
        ASSERT_EQ(tca_progress_threads(), 0);
    }
    void TearDown() override {
        EXPECT_EQ(tca_progress_clients(), 0);
        EXPECT_EQ(tca_progress_threads(), 0);
        EXPECT_EQ(tcaFinalize(), tcaSuccess);
    }
    std::string key_;
};

TEST_F(Engine, OneThreadForAllClientsFromTheFirstToTheLast) {
    const int before = threads_of_process();
    Counting a, b;
    const auto ha = a.hooks(), hb = b.hooks();
    tca_progress_client_t *ca = tca_progress_join(&ha);
    ASSERT_NE(ca, nullptr);
    EXPECT_EQ(tca_progress_threads(), 1);
    EXPECT_EQ(threads_of_process(), before + 1);
    tca_progress_client_t *cb = tca_progress_join(&hb);
    ASSERT_NE(cb, nullptr);
    EXPECT_EQ(tca_progress_threads(), 1) << "a second client shares the thread";
    EXPECT_EQ(threads_of_process(), before + 1);
    EXPECT_EQ(tca_progress_clients(), 2);
    EXPECT_TRUE(eventually([&] { return a.polls.load() > 0 && b.polls.load() > 0; }))
        << "both are polled";
    tca_progress_leave(ca);
    EXPECT_EQ(tca_progress_threads(), 1) << "b is still there";
    tca_progress_leave(cb);
    EXPECT_EQ(tca_progress_threads(), 0) << "the last leave stops it";
    EXPECT_TRUE(eventually([&] { return threads_of_process() == before; }));
}

TEST_F(Engine, ARaiseWakesTheSleepingThread) {
    Counting a;
    a.idle =
        60'000'000;  // a minute (the engine caps it at 10 s): only a raise ends the sleep in the test
    const auto h = a.hooks();
    tca_progress_client_t *c = tca_progress_join(&h);
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(eventually([&] { return a.polls.load() > 0; }));
    std::this_thread::sleep_for(50ms);
    const int settled = a.polls.load();
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(a.polls.load(), settled) << "idle: it sleeps, it does not spin";
    tca_progress_wake();
    EXPECT_TRUE(eventually([&] { return a.polls.load() > settled; }))
        << "a raise wakes it (the engine's own 10 s cap would be later)";
    tca_progress_leave(c);
}

// While no client listens (the application drives progress itself) the
// thread naps through interrupts, each of which would preempt a busy
// application thread; tca_progress_wake still ends the nap.
TEST_F(Engine, WhileNoClientListensARaiseDoesNotWakeItButAWakeDoes) {
    Counting a;
    a.idle = 60'000'000;
    a.listening = false;
    const auto h = a.hooks();
    tca_progress_client_t *c = tca_progress_join(&h);
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(eventually([&] { return a.polls.load() > 0; }));
    std::this_thread::sleep_for(50ms);
    int settled = a.polls.load();
    int node = -1;
    ASSERT_EQ(tcaGetNodeId(&node), tcaSuccess);
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(tcaInterruptRaise(node), tcaSuccess);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(a.polls.load(), settled) << "it naps through raises";
    tca_progress_wake();
    EXPECT_TRUE(eventually([&] { return a.polls.load() > settled; })) << "a wake ends the nap";
    // Listening again (from its next pass on): a raise wakes it.
    a.listening = true;
    tca_progress_wake();
    std::this_thread::sleep_for(50ms);
    settled = a.polls.load();
    ASSERT_EQ(tcaInterruptRaise(node), tcaSuccess);
    EXPECT_TRUE(eventually([&] { return a.polls.load() > settled; })) << "a raise wakes a listener";
    tca_progress_leave(c);
}

TEST_F(Engine, ALeaveWaitsForTheRunningPoll) {
    Counting a;
    a.hold = 30ms;
    a.idle = 0;  // pass again at once
    const auto h = a.hooks();
    tca_progress_client_t *c = tca_progress_join(&h);
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(eventually([&] { return a.in_poll.load(); }));
    tca_progress_leave(c);
    EXPECT_FALSE(a.in_poll.load()) << "on return no poll of it runs";
    const int polls = a.polls.load();
    std::this_thread::sleep_for(60ms);
    EXPECT_EQ(a.polls.load(), polls) << "and none comes later";
}

TEST_F(Engine, AClientMayLeaveFromInsideItsPoll) {
    Counting a, b;
    a.leave_inside = true;
    const auto ha = a.hooks(), hb = b.hooks();
    tca_progress_client_t *cb = tca_progress_join(&hb);
    a.self.store(tca_progress_join(&ha));
    ASSERT_NE(a.self.load(), nullptr);
    tca_progress_wake();  // a pass after self is known: it leaves inside it
    ASSERT_TRUE(eventually([&] { return tca_progress_clients() == 1; }));
    const int polls = a.polls.load();
    tca_progress_wake();
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(a.polls.load(), polls);
    tca_progress_leave(cb);
}

TEST_F(Engine, TheLastClientLeavingFromInsideItsPollEndsTheThread) {
    for (int round = 0; round < 3; ++round) {  // and a later join starts a new one
        Counting a;
        a.leave_inside = true;
        const auto h = a.hooks();
        a.self.store(tca_progress_join(&h));
        ASSERT_NE(a.self.load(), nullptr);
        tca_progress_wake();
        EXPECT_TRUE(
            eventually([] { return tca_progress_clients() == 0 && tca_progress_threads() == 0; }));
    }
}

TEST_F(Engine, ClientsComeAndGoFromManyThreads) {
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 150; ++i) {
                Counting c;
                c.idle = 0;
                const auto h = c.hooks();
                tca_progress_client_t *me = tca_progress_join(&h);
                if (me == nullptr) {
                    ++failures;
                    continue;
                }
                if (i % 8 == 0)
                    std::this_thread::sleep_for(200us);
                tca_progress_leave(me);
                if (c.in_poll.load())
                    ++failures;  // polled after its leave returned
            }
        });
    for (auto &th : threads)
        th.join();
    EXPECT_EQ(failures.load(), 0);
}

}  // namespace
