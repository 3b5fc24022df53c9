// owned_id.hpp - the numbers tcaChannelAcquire / tcaCounterAcquire /
// tcaSlotAcquire hand out.  An acquired index is returned with its owner's
// token above it (id = index | token << 16): the holder passes the id to the
// numbered calls as it would a plain number, while a plain number (token 0,
// what published programs use) or an id kept past its release names the
// index without the token and is refused (tcaErrorNotAcquired) for as long
// as someone holds it.  Runs stay consecutive: first + i is the id of the
// run's i-th index (indices stay far below 1 << 16).
#pragma once

#include <cstdint>

namespace tca {

constexpr int kOwnedIdShift = 16;
constexpr uint32_t kMaxOwnerToken = 0x7fff;  // ids stay positive ints

constexpr int owned_index(int id) noexcept {
    return id & ((1 << kOwnedIdShift) - 1);
}
constexpr uint32_t owned_token(int id) noexcept {
    return static_cast<uint32_t>(id) >> kOwnedIdShift;
}
constexpr int owned_id(int index, uint32_t token) noexcept {
    return index | static_cast<int>(token << kOwnedIdShift);
}

}  // namespace tca
