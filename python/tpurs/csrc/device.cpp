// The tpu device for torch: device guard, allocator (buffers owned by the Rust runtime),
// PrivateUse1 hooks and the default generators. Registered when the library is loaded.
#include <ATen/ATen.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "bridge.h"

namespace tpurs {

const TpursCoreApi* g_api = nullptr;
const TpursRuntime* g_rt = nullptr;

[[noreturn]] void throw_error(int32_t kind) {
  std::string msg = g_api ? g_api->last_error() : "tpurs runtime not initialised";
  switch (kind) {
    case TPURS_INDEX:
      TORCH_CHECK_INDEX(false, msg);
    case TPURS_VALUE:
      TORCH_CHECK_VALUE(false, msg);
    case TPURS_TYPE:
      TORCH_CHECK_TYPE(false, msg);
    case TPURS_NOT_IMPLEMENTED:
    case TPURS_UNCOVERED:
      TORCH_CHECK_NOT_IMPLEMENTED(false, msg);
    case TPURS_OUT_OF_MEMORY:
      TORCH_CHECK_WITH(OutOfMemoryError, false, msg);
    default:
      TORCH_CHECK(false, msg);
  }
}

namespace {

thread_local c10::DeviceIndex current_device = 0;

int32_t device_count() { return g_api ? g_api->device_count(g_rt) : 0; }

void check_index(c10::DeviceIndex d) {
  TORCH_CHECK(d >= 0 && d < device_count(), "Invalid device tpu:", static_cast<int>(d), ": ", device_count(),
              " tpu device(s) available");
}

struct TpuGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(c10::DeviceType::PrivateUse1, current_device); }
  void setDevice(c10::Device d) const override {
    check_index(d.index());
    current_device = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override { current_device = d.index(); }
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(device_count());
  }
  // Work on one device runs in launch order (PJRT tracks buffer dependencies) on its one
  // stream, so blocking a stream on an event is already true. A timing event waits for the
  // device when recorded and stamps the time, so elapsed_time spans the work between.
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    if (*event == nullptr) *event = new TpuEvent{flag == c10::EventFlag::BACKEND_DEFAULT};
    auto* e = static_cast<TpuEvent*>(*event);
    e->device = device_index >= 0 ? device_index : stream.device_index();
    if (e->timing) {
      synchronize(e->device);
      e->ns = std::chrono::steady_clock::now().time_since_epoch().count();
    }
    e->recorded = true;
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* event) const override {
    synchronizeEvent(event);  // done once waited for: never "done" while work is pending
    return true;
  }
  void synchronizeEvent(void* event) const override {
    auto* e = static_cast<TpuEvent*>(event);
    if (e != nullptr && e->recorded) synchronize(e->device);
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    // torch checked that both were recorded with timing on.
    auto *a = static_cast<TpuEvent*>(start), *b = static_cast<TpuEvent*>(end);
    return static_cast<double>(b->ns - a->ns) / 1e6;  // milliseconds, as CUDA's
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<TpuEvent*>(event);
  }
  bool queryStream(const c10::Stream& stream) const override {
    synchronizeStream(stream);
    return true;
  }
  void synchronizeStream(const c10::Stream& stream) const override { synchronize(stream.device_index()); }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override { synchronize(device_index); }

 private:
  struct TpuEvent {
    bool timing;
    bool recorded = false;
    c10::DeviceIndex device = 0;
    int64_t ns = 0;  // steady clock, when recorded (timing events)
  };
  static void synchronize(c10::DeviceIndex d) {
    if (g_api) check(g_api->synchronize(g_rt, d < 0 ? current_device : d));
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // The one stream frees nothing early, so there is no use to record (CUDA's allocator needs it).
  m.impl("record_stream", [](at::Tensor& /*self*/, c10::Stream /*stream*/) {});
  // Autograd's zeros (sgn, ...): plain zeros on the device, without the CPU's storage-free
  // ZeroTensor key.
  m.impl("_efficientzerotensor", [](c10::SymIntArrayRef size, std::optional<c10::ScalarType> dtype,
                                    std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                    std::optional<bool> /*pin_memory*/) {
    auto where = device.value_or(c10::Device(c10::DeviceType::PrivateUse1, current_device));
    return at::zeros_symint(size, at::TensorOptions().dtype(dtype).layout(layout).device(where));
  });
}

// Called for every allocation (event 1) and free (event 0) while torch.tpu.memory records
// its history (memory.py sets it through ctypes; NULL otherwise).
using MemoryHook = void (*)(int32_t event, const void* storage, int64_t nbytes, int32_t device);
std::atomic<MemoryHook> memory_hook{nullptr};

void free_storage(void* p) {
  if (auto hook = memory_hook.load()) hook(0, p, 0, -1);
  if (g_api) g_api->storage_free(p);
}

// Fills one torch statistic from the runtime's [current, peak, allocated, freed].
void fill(c10::CachingDeviceAllocator::StatArray& stat, const int64_t (&v)[4]) {
  auto& s = stat[static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE)];
  s.current = v[0];
  s.peak = v[1];
  s.allocated = v[2];
  s.freed = v[3];
}

// torch's device-allocator interface (torch.accelerator.memory_*, torch.tpu.memory_*). Every
// storage is its own PJRT buffer and nothing is cached, so reserved, active and requested
// memory all equal allocated memory, and each storage is one segment.
struct TpuAllocator final : c10::DeviceAllocator {
  c10::DataPtr allocate(size_t nbytes) override {
    TORCH_CHECK(g_api, "tpurs runtime not initialised");
    auto device = current_device;
    void* s = g_api->storage_new(g_rt, device, static_cast<int64_t>(nbytes));
    if (s == nullptr) throw_error(TPURS_RUNTIME);
    if (auto hook = memory_hook.load()) hook(1, s, static_cast<int64_t>(nbytes), device);
    return {s, s, &free_storage, c10::Device(c10::DeviceType::PrivateUse1, device)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_storage; }
  void copy_data(void* /*dest*/, const void* /*src*/, std::size_t /*count*/) const override {
    TORCH_CHECK(false, "tpu storages cannot be copied as raw memory; use Tensor.copy_");
  }
  bool initialized() override { return g_api != nullptr; }
  // Nothing is cached: freed storages return their buffers to the plugin at once.
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {}
  // Launches on a device run in order and buffers are reference-counted by the plugin, so a
  // storage used on another stream needs no extra tracking.
  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    TpursMemoryStats m{};
    check(g_api->memory_stats(g_rt, device, &m));
    c10::CachingDeviceAllocator::DeviceStats stats;
    for (auto* s : {&stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes, &stats.requested_bytes}) {
      fill(*s, m.bytes);
    }
    for (auto* s : {&stats.allocation, &stats.segment, &stats.active}) fill(*s, m.count);
    return stats;
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check(g_api->memory_reset(g_rt, device, TPURS_RESET_ACCUMULATED));
  }
  void resetPeakStats(c10::DeviceIndex device) override { check(g_api->memory_reset(g_rt, device, TPURS_RESET_PEAK)); }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    uint64_t free = 0, total = 0;
    check(g_api->memory_info(g_rt, device, &free, &total));
    return {static_cast<size_t>(free), static_cast<size_t>(total)};
  }
};

TpuAllocator g_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

// The device generator lives in Rust (seed + offset per device); this is its torch face.
struct TpuGeneratorImpl final : c10::GeneratorImpl {
  explicit TpuGeneratorImpl(c10::DeviceIndex d)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, d),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}
  std::pair<uint64_t, uint64_t> state() const {
    uint64_t seed = 0, offset = 0;
    check(g_api->rng_get(g_rt, device().index(), &seed, &offset));
    return {seed, offset};
  }
  void set_current_seed(uint64_t seed) override { check(g_api->rng_set(g_rt, device().index(), seed, 0)); }
  void set_offset(uint64_t offset) override {
    check(g_api->rng_set(g_rt, device().index(), state().first, offset));
  }
  uint64_t get_offset() const override { return state().second; }
  uint64_t current_seed() const override { return state().first; }
  uint64_t seed() override {
    uint64_t s = c10::detail::getNonDeterministicRandom();
    set_current_seed(s);
    return s;
  }
  void set_state(const c10::TensorImpl& new_state) override {
    TORCH_CHECK(new_state.numel() == 16 && new_state.dtype() == at::kByte,
                "tpu generator state must be a ByteTensor of 16 bytes");
    auto p = static_cast<const uint64_t*>(new_state.data());
    check(g_api->rng_set(g_rt, device().index(), p[0], p[1]));
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    auto t = at::empty({16}, at::kByte);
    auto p = static_cast<uint64_t*>(t.data_ptr());
    auto s = state();
    p[0] = s.first;
    p[1] = s.second;
    return t.getIntrusivePtr();
  }
  TpuGeneratorImpl* clone_impl() const override { return new TpuGeneratorImpl(device().index()); }
};

const at::Generator& default_generator(c10::DeviceIndex d) {
  static std::once_flag once;
  static std::vector<at::Generator> gens;
  std::call_once(once, [] {
    for (int i = 0; i < std::max(1, device_count()); ++i) {
      gens.push_back(at::make_generator<TpuGeneratorImpl>(static_cast<c10::DeviceIndex>(i)));
    }
  });
  auto i = d < 0 ? current_device : d;
  check_index(i);
  return gens.at(i);
}

struct TpuHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex d) const override { return default_generator(d); }
  at::Generator getNewGenerator(c10::DeviceIndex d) const override {
    return at::make_generator<TpuGeneratorImpl>(d < 0 ? current_device : d);
  }
  at::Device getDeviceFromPtr(void* /*data*/) const override {
    return c10::Device(c10::DeviceType::PrivateUse1, current_device);
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }
  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count()); }
  void setCurrentDevice(c10::DeviceIndex d) const override {
    check_index(d);
    current_device = d;
  }
  c10::DeviceIndex getCurrentDevice() const override { return current_device; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    auto old = current_device;
    setCurrentDevice(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override { return exchangeDevice(d); }
  // `UntypedStorage.resize_` (FSDP2 frees and regrows unsharded parameters this way): a new
  // Rust storage keeping the old bytes up to the smaller size.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    const size_t kept = std::min(storage.nbytes(), newsize);
    auto bytes = [](const c10::Storage& s, size_t n) {
      auto options = at::TensorOptions().dtype(at::kByte).device(s.device());
      return at::empty({0}, options).set_(s, 0, {static_cast<int64_t>(n)}, {1});
    };
    at::Tensor old = kept > 0 ? bytes(storage, kept).clone() : at::Tensor();
    c10::DeviceGuard guard(storage.device());
    c10::Storage target = storage;  // shares the StorageImpl
    target.set_data_ptr_noswap(allocator()->allocate(newsize));
    target.set_nbytes(newsize);
    if (old.defined()) bytes(target, kept).copy_(old);
  }
};

}  // namespace

c10::Allocator* allocator() { return &g_allocator; }

at::Tensor wrap_storage(void* storage, int64_t nbytes, int32_t dtype, int32_t device, const int64_t* sizes,
                        int64_t ndim) {
  c10::Device dev(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  if (auto hook = memory_hook.load()) hook(1, storage, nbytes, device);
  c10::Storage st(c10::Storage::use_byte_size_t(), nbytes, c10::DataPtr(storage, storage, &free_storage, dev),
                  &g_allocator, /*resizable=*/true);
  auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(st), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                    c10::scalarTypeToTypeMeta(static_cast<c10::ScalarType>(dtype)));
  t.unsafeGetTensorImpl()->set_sizes_contiguous(c10::IntArrayRef(sizes, static_cast<size_t>(ndim)));
  return t;
}

TpursArg tensor_arg(const at::Tensor& t) {
  TpursArg a{};
  a.kind = TPURS_TENSOR;
  a.dtype = static_cast<int32_t>(t.scalar_type());
  a.device = t.device().index();
  a.ndim = t.dim();
  a.sizes = t.sizes().data();
  a.strides = t.strides().data();
  a.offset = t.storage_offset();
  // Every tpu storage is a runtime storage handed out with one of our deleters; a storage
  // torch carved out of one (`UntypedStorage[a:b]` offsets the pointer) is not, and reading
  // it as one would read arbitrary memory.
  const c10::DataPtr& data = t.storage().data_ptr();
  const auto deleter = data.get_deleter();
  TORCH_CHECK_NOT_IMPLEMENTED(
      data.get() == nullptr || deleter == &free_storage || deleter == g_api->storage_free,
      "tpurs: this tpu storage is a byte slice of another (UntypedStorage[start:end]), which tpurs does not "
      "support; slice the tensor instead");
  a.storage = data.get();
  return a;
}

}  // namespace tpurs

extern "C" void tpurs_set_memory_hook(tpurs::MemoryHook hook) { tpurs::memory_hook.store(hook); }

extern "C" int tpurs_bridge_init(const TpursCoreApi* api, const TpursRuntime* rt) {
  if (api == nullptr || rt == nullptr || api->version != TPURS_API_VERSION) return 1;
  if (tpurs::g_api != nullptr) return 0;
  tpurs::g_api = api;
  tpurs::g_rt = rt;
  static tpurs::TpuHooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  tpurs::register_table_ops();
  return 0;
}
