// registration_lookup_test.cpp - tcaHandleOfAddress, tcaHandleOfKey and
// tcaRevokeHandle: a node finds another node's live host registration by
// address (the owner's current handle, whatever the caller held) or by table
// slot and key, and a revoked registration refuses every later put and
// lookup, a second deregistration included.
#include <vector>

#include "harness.hpp"

namespace tca::test {

TEST(RegistrationLookup, AnAddressFindsTheOwnersCurrentRegistration) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        std::vector<unsigned char> buf(3 * 4096, 0);
        if (node == 1) {
            tcaHandle first{}, second{};
            // Two registrations of the buffer's halves; the first is replaced.
            NODE_OK(tcaCreateHandle(&first, buf.data(), 4096, tcaMemoryCPU));
            NODE_OK(tcaCreateHandle(&second, buf.data() + 4096, 2 * 4096, tcaMemoryCPU));
            board.publish(1, 0, first);
            board.publish(1, 1, second);
            board.barrier();  // node 0 looks them up
            board.barrier();
            NODE_OK(tcaRevokeHandle(&first));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered, tcaRevokeHandle(&first));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered, tcaDestroyHandle(&first));
            board.barrier();  // node 0 puts through the revoked one
            board.barrier();
            for (size_t i = 0; i < 4096; ++i)
                NODE_CHECK(buf[i] == 0);  // nothing landed
            NODE_CHECK(buf[4096 + 10] == 0x77);
            NODE_OK(tcaDestroyHandle(&second));
        } else {
            board.barrier();
            const tcaHandle first = board.get(1, 0), second = board.get(1, 1);
            tcaHandle found{};
            NODE_OK(tcaHandleOfAddress(1, first.addr + 100, 8, &found));
            NODE_CHECK(found.key == first.key && found.addr == first.addr &&
                       found.size == first.size && found.reg_index == first.reg_index);
            NODE_OK(tcaHandleOfAddress(1, second.addr + 4096, 4096, &found));
            NODE_CHECK(found.key == second.key);
            // By table slot and key: the registration itself, never another key's.
            NODE_OK(tcaHandleOfKey(1, second.reg_index, second.key, &found));
            NODE_CHECK(found.addr == second.addr && found.size == second.size &&
                       found.region == tcaMemoryCPU);
            NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                               tcaHandleOfKey(1, second.reg_index, second.key + 2, &found));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                               tcaHandleOfKey(1, first.reg_index, second.key, &found));
            NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaHandleOfKey(-1, 0, 1, &found));
            // Across both registrations, past the end, another node's range: none.
            NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                               tcaHandleOfAddress(1, first.addr + 4000, 200, &found));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                               tcaHandleOfAddress(1, second.addr + second.size, 1, &found));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered, tcaHandleOfAddress(0, first.addr, 8, &found));
            NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaHandleOfAddress(2, first.addr, 8, &found));
            board.barrier();  // node 1 revokes the first
            board.barrier();
            const unsigned char b = 0x77;
            tcaHandle stale = first, live = second;
            NODE_EXPECT_RESULT(tcaErrorNotRegistered, tcaPioWrite(&stale, 10, &b, 1, 0, 0, 0));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                               tcaHandleOfAddress(1, first.addr + 10, 1, &found));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                               tcaHandleOfKey(1, first.reg_index, first.key, &found));
            NODE_OK(tcaPioWrite(&live, 10, &b, 1, 0, 0, 0));
            // Only the owner revokes its registrations.
            NODE_EXPECT_RESULT(tcaErrorInvalidHandle, tcaRevokeHandle(&live));
            board.barrier();
        }
        return 0;
    }));
}

}  // namespace tca::test
