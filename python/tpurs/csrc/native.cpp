// The few kernels that are about tensor metadata or host memory rather than math:
// allocation, views (PyTorch's own stride arithmetic), copies to and from the host,
// resize_/set_ and reading one value. Everything computational lives in the Rust table.
#include <ATen/EmptyTensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/unfold_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/strides.h>
#include <torch/library.h>

#include <cstdlib>
#include <mutex>
#include <unordered_set>

#include "bridge.h"

namespace tpurs {

bool fallback_forbidden() {
  static const bool strict = [] {
    const char* v = std::getenv("TPURS_FALLBACK");
    return v != nullptr && std::string(v) == "error";
  }();
  return strict;
}

// Ops with no rule, and calls a rule does not cover (a dtype it does not handle), run on
// the CPU: one warning per op, a counter, or an error when TPURS_FALLBACK=error.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& name = op.schema().operator_name();
  std::string full = name.name + (name.overload_name.empty() ? "" : "." + name.overload_name);
  TORCH_CHECK_NOT_IMPLEMENTED(!fallback_forbidden(), "tpurs has no lowering for ", full,
                              " and TPURS_FALLBACK=error forbids running it on the CPU");
  if (g_api->record_fallback(g_rt, full.c_str()) == 1) {
    TORCH_WARN("tpurs: ", full, " has no tpu lowering; running it on the CPU (copies in and out)");
  }
  at::native::cpu_fallback(op, stack);
}

namespace {

c10::DispatchKeySet tpu_keys() { return c10::DispatchKeySet(c10::DispatchKey::PrivateUse1); }

// torch.use_deterministic_algorithms(True) with fill_uninitialized_memory (the default):
// new memory holds NaN or the type's largest value, as on CPU and CUDA.
bool fills_uninitialized_memory() {
  return at::globalContext().deterministicAlgorithms() && at::globalContext().deterministicFillUninitializedMemory();
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> /*layout*/, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");
  c10::OptionalDeviceGuard guard(device);
  auto st = dtype.value_or(c10::typeMetaToScalarType(c10::get_default_dtype()));
  at::Tensor t = at::detail::empty_generic(size, allocator(), tpu_keys(), st, memory_format);
  if (fills_uninitialized_memory()) at::native::fill_empty_deterministic_(t);
  return t;
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> /*layout*/, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");
  c10::OptionalDeviceGuard guard(device);
  auto st = dtype.value_or(c10::typeMetaToScalarType(c10::get_default_dtype()));
  at::Tensor t = at::detail::empty_strided_generic(size, stride, allocator(), tpu_keys(), st);
  if (fills_uninitialized_memory()) at::native::fill_empty_deterministic_(t);
  return t;
}

bool is_tpu(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

// Negates what `t` stores, whatever its negative bit says.
void negate_stored(const at::Tensor& t) { (t.is_neg() ? t._neg_view() : t).neg_(); }

// Conjugates what `t` stores, whatever its conjugate bit says.
void conjugate_stored(const at::Tensor& t) { (t.is_conj() ? t.conj() : t).conj_physical_(); }

void release_storage(void* storage) { delete static_cast<c10::Storage*>(storage); }

// A `non_blocking` copy of a whole pinned tensor starts the upload and returns; the source
// storage stays referenced until the plugin has read it. False where it does not apply.
bool upload_pinned(const at::Tensor& self, const at::Tensor& dst) {
  if (self.scalar_type() != dst.scalar_type() || self.sizes() != dst.sizes() || !self.is_contiguous() ||
      self.is_neg() || self.is_conj() || dst.is_neg() || dst.is_conj() || !is_pinned(self.storage().data())) {
    return false;
  }
  TpursArg d = tensor_arg(dst);
  check(g_api->copy_from_host_async(g_rt, &d, self.data_ptr(), static_cast<int64_t>(self.nbytes()),
                                    new c10::Storage(self.storage()), &release_storage));
  return true;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0) return dst;
  // torch checks this after handing other devices' copies to `_copy_from`.
  at::assert_no_internal_overlap(dst);
  // A negative view keeps its sign in a bit, not in its data: the copies below move data,
  // then what the destination stores is negated where the two bits differ.
  const bool flip = self.is_neg() != dst.is_neg();
  const bool conj = self.is_conj() != dst.is_conj();
  if (is_tpu(self) && is_tpu(dst)) {
    // Same device: the Rust copy rule casts and broadcasts. Across devices: cast on the
    // source device first, then move equal shapes and dtypes.
    at::Tensor src = self;
    if (self.device() != dst.device()) {
      src = self.expand_as(dst);
      if (src.scalar_type() != dst.scalar_type()) {
        at::Tensor cast = at::empty(dst.sizes(), src.options().dtype(dst.scalar_type()));
        TpursArg c = tensor_arg(cast), s = tensor_arg(src);
        check(g_api->copy_between(g_rt, &c, &s));
        src = cast;
      }
    }
    TpursArg d = tensor_arg(dst), s = tensor_arg(src);
    check(g_api->copy_between(g_rt, &d, &s));
    if (flip) negate_stored(dst);
    if (conj) conjugate_stored(dst);
  } else if (is_tpu(dst)) {
    if (non_blocking && upload_pinned(self, dst)) return dst;
    at::Tensor src = self.resolve_neg().resolve_conj().to(dst.scalar_type()).expand_as(dst).contiguous();
    TpursArg d = tensor_arg(dst);
    check(g_api->copy_from_host(g_rt, &d, src.data_ptr(), static_cast<int64_t>(src.nbytes())));
    if (dst.is_neg()) negate_stored(dst);
    if (dst.is_conj()) conjugate_stored(dst);
  } else {
    // A dense destination of the same shape and dtype (as `.cpu()` makes) takes the bytes
    // directly; anything else goes through a staging tensor and CPU copy_.
    bool direct = dst.scalar_type() == self.scalar_type() && dst.sizes() == self.sizes() &&
                  dst.is_contiguous() && !dst.is_conj() && !dst.is_neg();
    at::Tensor host = direct ? dst : at::empty(self.sizes(), self.options().device(c10::kCPU));
    TpursArg s = tensor_arg(self);
    check(g_api->copy_to_host(g_rt, &s, host.data_ptr(), static_cast<int64_t>(host.nbytes())));
    if (self.is_neg()) host.neg_();
    if (self.is_conj()) host.conj_physical_();
    if (!direct) dst.copy_(host);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

// Keeps sizes, strides and offset valid for the storage, giving it a new (empty) Rust
// storage when it must grow. Old contents are copied when there were any.
const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  const int64_t itemsize = static_cast<int64_t>(self.dtype().itemsize());
  const int64_t kept = static_cast<int64_t>(self.storage().nbytes()) / itemsize - self.storage_offset();
  impl->set_sizes_contiguous(size);
  if (memory_format && *memory_format != at::MemoryFormat::Contiguous) {
    impl->empty_tensor_restride(*memory_format);
  }
  size_t needed = at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(),
                                                   self.storage_offset());
  if (needed > self.storage().nbytes()) {
    // Like torch's resize_, the storage's bytes from the offset on are kept; copying them
    // is only paid when the storage grows.
    auto flat = [&](const c10::Storage& s, int64_t n) {
      return at::empty({0}, self.options()).set_(s, self.storage_offset(), {n}, {1});
    };
    at::Tensor old = kept > 0 ? flat(self.storage(), kept).clone() : at::Tensor();
    const int64_t old_nbytes = static_cast<int64_t>(self.storage().nbytes());
    c10::DeviceGuard guard(self.device());
    self.storage().set_data_ptr_noswap(allocator()->allocate(needed));
    self.storage().set_nbytes(needed);
    if (old.defined()) flat(self.storage(), kept).copy_(old);
    if (fills_uninitialized_memory()) at::native::fill_resize_deterministic_(self, old_nbytes);
  }
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, c10::SymInt offset, c10::SymIntArrayRef size,
                        c10::SymIntArrayRef stride) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(std::move(source));
  auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  // No strides means contiguous, as in torch's set_.
  c10::DimVector strides =
      stride.empty() ? c10::contiguous_strides(sizes) : c10::DimVector(C10_AS_INTARRAYREF_SLOW(stride));
  impl->set_sizes_and_strides(sizes, strides, offset.guard_int(__FILE__, __LINE__));
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  std::vector<c10::SymInt> size{c10::SymInt(n)}, stride{c10::SymInt(1)};
  return set_storage(self, std::move(source), 0, size, stride);
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  return set_storage(self, source.storage(), source.sym_storage_offset(), source.sym_sizes(), source.sym_strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, allocator()->allocate(0), allocator(), true);
  std::vector<c10::SymInt> size{c10::SymInt(0)}, stride{c10::SymInt(1)};
  return set_storage(self, std::move(empty), 0, size, stride);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  at::Tensor host = self.to(c10::kCPU);
  return host.item();
}

// Data-dependent shapes: read the count (the one host sync), then run static-shape ops.
at::Tensor nonzero(const at::Tensor& self) {
  int64_t count = self.ne(0).sum().item<int64_t>();
  return at::nonzero_static(self, count, -1);
}

// As CPU: Long only, resized with resize_output (a right-sized out keeps its strides).
at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  TORCH_CHECK(self.device() == out.device(), "expected self and out to be on the same device, but got out on ",
              out.device(), " and self on ", self.device());
  auto result = tpurs::nonzero(self);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

// torch.equal: same sizes and equal values (dtypes compare after promotion, NaN never
// equals); the answer is a host bool, so this is one read.
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              self.device(), " and ", other.device(), "!");
  if (!self.sizes().equals(other.sizes())) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  auto shape = at::infer_size(self.sizes(), mask.sizes());
  auto values = self.expand(shape).reshape({-1});
  auto where = at::nonzero(mask.expand(shape).reshape({-1})).squeeze(1);
  return values.index_select(0, where);
}

// `_lazy_clone` shares the storage copy-on-write and relies on a write materializing it
// through the storage's raw data pointer, which tpu kernels never take: a write through the
// clone changed the original. A real clone has the same meaning.
at::Tensor lazy_clone(const at::Tensor& self) { return self.clone(); }

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "masked_select(): self and result must have the same scalar type");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
  const at::Tensor values = tpurs::masked_select(self, mask);
  at::native::resize_output(out, values.sizes());
  return out.copy_(values);
}

// `param.data = tpu_tensor` (what `Module.to("tpu")` does) is allowed between dense CPU and
// tpu tensors, as between CPU and CUDA: without it `Module._apply` makes new Parameters,
// which unties tied weights (embeddings and LM heads) and detaches them from optimizers.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto dense = [](const at::Tensor& t) {
    return t.layout() == at::kStrided && (t.device().is_cpu() || t.device().is_privateuseone());
  };
  return dense(self) && dense(from);
}

}  // namespace
}  // namespace tpurs

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &tpurs::empty_memory_format);
  m.impl("empty_strided", &tpurs::empty_strided);
  m.impl("_copy_from", &tpurs::copy_from);
  m.impl("_copy_from_and_resize", &tpurs::copy_from_and_resize);
  m.impl("resize_", &tpurs::resize_);
  m.impl("set_.source_Storage_storage_offset", &tpurs::set_storage);
  m.impl("set_.source_Storage", &tpurs::set_source_storage);
  m.impl("set_.source_Tensor", &tpurs::set_source_tensor);
  m.impl("set_", &tpurs::set_empty);
  m.impl("_local_scalar_dense", &tpurs::local_scalar_dense);
  m.impl("nonzero", &tpurs::nonzero);
  m.impl("nonzero.out", &tpurs::nonzero_out);
  m.impl("masked_select", &tpurs::masked_select);
  m.impl("masked_select.out", &tpurs::masked_select_out);
  m.impl("_lazy_clone", &tpurs::lazy_clone);
  m.impl("equal", &tpurs::equal);
  m.impl("_has_compatible_shallow_copy_type", &tpurs::has_compatible_shallow_copy_type);
  m.impl("view", &at::native::view);
  m.impl("view_as_real", &at::native::view_as_real);
  m.impl("view_as_complex", &at::native::view_as_complex);
  m.impl("as_strided", &at::native::as_strided_tensorimpl);
  m.impl("_reshape_alias", &at::native::_reshape_alias);
  m.impl("unfold", &at::native::unfold);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&tpurs::cpu_fallback>());
}

// `_copy_from`'s schema does not mark its destination as written, so torch's negative- and
// conjugate-bit fallbacks would copy into a resolved temporary and lose the write;
// `copy_from` handles the bits itself. (Only backends that copy through `_copy_from` reach
// this.)
TORCH_LIBRARY_IMPL(aten, Negative, m) { m.impl("_copy_from", torch::CppFunction::makeFallthrough()); }
TORCH_LIBRARY_IMPL(aten, Conjugate, m) { m.impl("_copy_from", torch::CppFunction::makeFallthrough()); }
