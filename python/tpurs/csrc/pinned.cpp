// Pinned host memory for the tpu device: page-aligned blocks, the alignment PJRT plugins
// need to read host memory in place. `pin_memory()` and `DataLoader(pin_memory=True)`
// allocate here, and a `non_blocking=True` copy from such a block uploads while the host
// goes on (native.cpp).
#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "bridge.h"

namespace tpurs {
namespace {

constexpr size_t kPage = 4096;

std::mutex blocks_mutex;
std::map<uintptr_t, size_t> blocks;  // start -> requested bytes, for is_pinned

void free_pinned(void* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(blocks_mutex);
    blocks.erase(reinterpret_cast<uintptr_t>(p));
  }
  std::free(p);
}

struct PinnedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    void* p = nullptr;
    if (n > 0) {
      p = std::aligned_alloc(kPage, (n + kPage - 1) / kPage * kPage);
      TORCH_CHECK_WITH(OutOfMemoryError, p != nullptr, "tpurs: could not allocate ", n,
                       " bytes of pinned host memory");
      std::lock_guard<std::mutex> lock(blocks_mutex);
      blocks[reinterpret_cast<uintptr_t>(p)] = n;
    }
    return {p, p, &free_pinned, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
};

}  // namespace

c10::Allocator* pinned_allocator() {
  static PinnedAllocator instance;
  return &instance;
}

bool is_pinned(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(blocks_mutex);
  auto next = blocks.upper_bound(at);
  if (next == blocks.begin()) return false;
  const auto& [start, size] = *std::prev(next);
  return at < start + size;
}

}  // namespace tpurs
