// The generic boxed kernel: packs an op's IValue stack into TpursArg structs, calls the
// Rust lowering table, and turns its results into tensors. Registered by name for every op
// the table lists; everything else reaches the CPU fallback in fallback.cpp.
#include <ATen/Dispatch_v2.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "bridge.h"

namespace tpurs {
namespace {

// Boxed ScalarType and Scalar arguments arrive as plain ints / doubles; the schema says which.
// MovableIndex: a CPU index tensor that is copied to the device, as for `Tensor?[]` lists.
enum class ArgHint { Plain, Dtype, Scalar, MovableIndex };

// The memory format of an op's fresh results. The device computes them dense; where CPU
// PyTorch gives a channels-last result, the result is restrided with one device copy.
enum class Layout {
  Dense,           // always contiguous
  FollowInput,     // that of the first tensor argument with the result's sizes (pointwise ops)
  FollowRank,      // that of the first tensor (or list) argument of the result's rank (cat, nn ops)
  MemoryFormatArg  // the `memory_format` argument's; `preserve_format` keeps self's
};

// What the schema says about one op: which arguments are written, which are dtypes, what
// each return is. Computed once at registration.
struct OpDesc {
  uint32_t id = 0;
  std::vector<int32_t> mutable_args;  // argument indices with alias_info.is_write
  std::vector<bool> mutable_is_out;   // kwarg-only mutable args are out= arguments
  std::vector<ArgHint> hints;         // how to read ints and doubles of each argument
  std::vector<int32_t> return_alias;  // per return: index into mutable_args, or -1 fresh, -2 list
  Layout layout = Layout::Dense;
  int32_t memory_format_arg = -1;
  bool no_internal_overlap = false;  // written tensors may not repeat an element (CPU's check)
  bool no_full_overlap = false;      // nor share any element with an input
  bool warns_byte_indices = false;    // _index_put_impl_: CPU warns for uint8 masks
  bool warns_float_random = false;    // random_.from: CPU warns past a float's exact integers
  bool warns_degrees_of_freedom = false;  // var / std (and _mean): correction >= reduced count
  int32_t fill_value_arg = -1;  // a Scalar written into self, which must fit its type (CPU's Scalar::to)
  // The Scalar argument that may be a uint64 number (past int64's range), or -1: a fill's
  // value (checked above), or the number a comparison casts to the common type as CPU does.
  int32_t wide_number_arg = -1;
  // The name CPU's nondeterminism alert gives the op under torch.use_deterministic_algorithms,
  // or null: max_unpool writes repeated indices in no defined order.
  const char* nondeterministic = nullptr;
};

// In-place ops that are not pointwise but check their written tensor like CPU PyTorch's
// TensorIterator kernels do; `fill_` and `zero_` do not check there. The indexing ops write
// only some positions, which a whole-view write-back into repeated elements (`expand`) would
// undo: CPU refuses most of them, and only warns for index_fill_, index_put_ and
// masked_fill_ ("deprecated"), which tpu refuses too rather than return stale values.
bool checks_internal_overlap(const std::string& name) {
  static const char* names[] = {
      "aten::uniform_",      "aten::normal_",        "aten::random_",         "aten::bernoulli_",
      "aten::exponential_",  "aten::cauchy_",        "aten::log_normal_",     "aten::geometric_",
      "tpurs::copy_",        "aten::index_fill_",    "aten::index_put_",      "aten::_index_put_impl_",
      "aten::masked_fill_",  "aten::masked_scatter_", "aten::scatter_",       "aten::scatter_add_",
      "aten::scatter_reduce_", "aten::index_copy_",  "aten::index_add_",      "aten::index_reduce_",
      "aten::put_"};
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
}

// Indexing ops that refuse an input sharing any memory with the written tensor (CPU's
// assert_no_overlap), not only a partial overlap: `i.index_fill_(0, i, 0)` reads the index
// it writes.
bool checks_full_overlap(const std::string& name) {
  static const char* names[] = {"aten::index_fill_", "aten::index_fill", "aten::index_add_",  "aten::index_add",
                                "aten::index_copy_", "aten::index_copy", "aten::scatter_",    "aten::scatter",
                                "aten::scatter_add_", "aten::scatter_add", "aten::put_",      "aten::index_put_",
                                "aten::_index_put_impl_", "aten::gather", "aten::index_select", "aten::take"};
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
}

// Ops besides the pointwise ones whose results keep a channels-last input's layout on the CPU.
bool follows_input_layout(const std::string& name) {
  static const char* names[] = {"aten::cat",
                                "aten::convolution",
                                "aten::native_batch_norm",
                                "aten::_native_batch_norm_legit",
                                "aten::_native_batch_norm_legit_no_training",
                                "aten::max_pool2d_with_indices",
                                "aten::max_pool3d_with_indices",
                                "aten::avg_pool2d",
                                "aten::_adaptive_avg_pool2d",
                                "aten::upsample_nearest2d",
                                "aten::upsample_bilinear2d",
                                "aten::_upsample_bilinear2d_aa",
                                "aten::_upsample_bicubic2d_aa",
                                "aten::upsample_nearest3d",
                                "aten::upsample_trilinear3d",
                                "aten::_upsample_nearest_exact2d",
                                "aten::_upsample_nearest_exact3d",
                                "aten::adaptive_max_pool2d",
                                "aten::native_group_norm",
                                "aten::constant_pad_nd",
                                "aten::reflection_pad2d",
                                "aten::reflection_pad3d",
                                "aten::replication_pad2d",
                                "aten::replication_pad3d",
                                "aten::hardswish",
                                "aten::pixel_shuffle",
                                "aten::pixel_unshuffle",
                                "aten::channel_shuffle",
                                "aten::_prelu_kernel"};
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
}

std::unordered_map<const c10::FunctionSchema*, OpDesc>& descs() {
  static std::unordered_map<const c10::FunctionSchema*, OpDesc> d;
  return d;
}

ArgHint hint_of(const c10::TypePtr& type) {
  c10::TypePtr t = type;
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  if (auto list = t->cast<c10::ListType>()) t = list->getElementType();
  if (t->kind() == c10::TypeKind::ScalarTypeType) return ArgHint::Dtype;
  if (t->kind() == c10::TypeKind::NumberType) return ArgHint::Scalar;
  return ArgHint::Plain;
}

// The Scalar argument that CPU's kernel converts to self's type with an overflow check (a
// complex number with an imaginary part into a real tensor, 300 into uint8), or -1.
int32_t scalar_fill_arg(const c10::FunctionSchema& schema) {
  const std::string& name = schema.name();
  const std::string& overload = schema.overload_name();
  if (name == "aten::fill_" && overload == "Scalar") return 1;
  if ((name == "aten::masked_fill" || name == "aten::masked_fill_") && overload == "Scalar") return 2;
  if ((name == "aten::scatter" || name == "aten::scatter_") && overload.rfind("value", 0) == 0) return 3;
  return -1;
}

OpDesc describe(const c10::FunctionSchema& schema, uint32_t id, bool pointwise) {
  OpDesc d;
  d.id = id;
  const auto& args = schema.arguments();
  if (pointwise) d.layout = Layout::FollowInput;
  const bool fills = schema.name() == "aten::fill_" || schema.name() == "aten::zero_";
  d.no_internal_overlap = (pointwise && !fills) || checks_internal_overlap(schema.name());
  d.no_full_overlap = checks_full_overlap(schema.name());
  if (follows_input_layout(schema.name())) d.layout = Layout::FollowRank;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name() == "memory_format") {
      d.layout = Layout::MemoryFormatArg;
      d.memory_format_arg = static_cast<int32_t>(i);
    }
  }
  // native_batch_norm updates running_mean / running_var in place although its schema
  // does not mark them as written.
  const bool writes_running_stats = schema.name() == "aten::native_batch_norm";
  // torch's own `index` wrapper warns before reaching a backend; `_index_put_impl_` is ours.
  d.warns_byte_indices = schema.name() == "aten::_index_put_impl_";
  d.warns_float_random = schema.name() == "aten::random_" && schema.overload_name() == "from";
  static const std::set<std::string> variances = {"aten::var", "aten::std", "aten::var_mean", "aten::std_mean"};
  d.warns_degrees_of_freedom =
      variances.count(schema.name()) > 0 && schema.overload_name().rfind("correction", 0) == 0;
  d.fill_value_arg = scalar_fill_arg(schema);
  static const std::set<std::string> comparisons = {"aten::eq", "aten::ne", "aten::lt",
                                                    "aten::le", "aten::gt", "aten::ge"};
  const bool compares_number = comparisons.count(schema.name()) > 0 && schema.overload_name().rfind("Scalar", 0) == 0;
  d.wide_number_arg = compares_number ? 1 : d.fill_value_arg;
  if (schema.name() == "aten::max_unpool2d") d.nondeterministic = "max_unpooling2d_forward_out";
  if (schema.name() == "aten::max_unpool3d") d.nondeterministic = "max_unpooling3d_forward_out";
  // index_fill takes a CPU index on CPU and in PyTorch's device-generic tests (CUDA's
  // TensorIterator refuses it); moving the small index costs one copy.
  const bool movable_index = schema.name() == "aten::index_fill" || schema.name() == "aten::index_fill_";
  for (size_t i = 0; i < args.size(); ++i) {
    d.hints.push_back(movable_index && args[i].name() == "index" ? ArgHint::MovableIndex : hint_of(args[i].real_type()));
    if (writes_running_stats && (i == 3 || i == 4)) {
      d.mutable_args.push_back(static_cast<int32_t>(i));
      d.mutable_is_out.push_back(false);
      continue;
    }
    if (args[i].alias_info() && args[i].alias_info()->isWrite()) {
      d.mutable_args.push_back(static_cast<int32_t>(i));
      d.mutable_is_out.push_back(args[i].kwarg_only());
    }
  }
  for (const auto& r : schema.returns()) {
    int32_t alias = r.type()->kind() == c10::TypeKind::ListType ? TPURS_RETURN_FRESH_LIST : TPURS_RETURN_FRESH;
    if (r.alias_info()) {
      for (size_t k = 0; k < d.mutable_args.size(); ++k) {
        const auto& a = args[d.mutable_args[k]];
        if (a.alias_info() && a.alias_info()->beforeSets() == r.alias_info()->beforeSets()) {
          alias = static_cast<int32_t>(k);
        }
      }
    }
    d.return_alias.push_back(alias);
  }
  return d;
}

// Per-call scratch kept across calls so packing does not allocate in the common case.
struct Packer {
  std::vector<TpursArg> args;
  std::deque<std::vector<TpursArg>> lists;
  std::deque<std::vector<int64_t>> ints;
  std::deque<std::vector<double>> floats;
  std::deque<std::vector<uint8_t>> bools;
  std::deque<std::string> strs;
  std::vector<TpursWrite> writes;
  std::vector<int32_t> returns;
  std::vector<at::Tensor> moved;  // CPU tensors copied to the device for this call
  size_t nlists = 0, nints = 0, nfloats = 0, nbools = 0, nstrs = 0;
  int32_t device = -1;

  void reset() {
    args.clear();
    moved.clear();
    writes.clear();
    returns.clear();
    nlists = nints = nfloats = nbools = nstrs = 0;
    device = -1;
  }
  // A CPU tensor copied to this call's device, kept alive until the call ends.
  const at::Tensor& move_to_device(const at::Tensor& t) {
    moved.push_back(t.to(c10::Device(c10::DeviceType::PrivateUse1, std::max<int32_t>(device, 0))));
    return moved.back();
  }
  template <typename T>
  std::vector<T>& next(std::deque<std::vector<T>>& pool, size_t& n) {
    if (n == pool.size()) pool.emplace_back();
    auto& v = pool[n++];
    v.clear();
    return v;
  }
};

thread_local Packer packer;

// The channels-last format CPU PyTorch would give `d`'s fresh result of sizes `out`
// (Contiguous when none).
at::MemoryFormat wanted_layout(const OpDesc& d, c10::ArrayRef<c10::IValue> args, c10::IntArrayRef out) {
  if (d.layout == Layout::MemoryFormatArg) {
    const auto& v = args[d.memory_format_arg];
    auto format = v.isNone() ? at::MemoryFormat::Preserve : v.toMemoryFormat();
    if (format != at::MemoryFormat::Preserve) return format;
    return args[0].isTensor() ? args[0].toTensor().suggest_memory_format() : at::MemoryFormat::Contiguous;
  }
  const bool by_rank = d.layout == Layout::FollowRank;
  for (const auto& a : args) {
    at::Tensor t;
    if (a.isTensor()) {
      t = a.toTensor();
    } else if (by_rank && a.isTensorList() && !a.toTensorList().empty()) {
      t = a.toTensorList().get(0);
    }
    if (!t.defined()) continue;
    if (by_rank ? t.dim() == static_cast<int64_t>(out.size()) : t.sizes() == out) return t.suggest_memory_format();
    if (by_rank) break;
  }
  return at::MemoryFormat::Contiguous;
}

// Fresh results (not those that alias an argument) in the layout CPU PyTorch gives them.
void match_layout(const OpDesc& d, c10::ArrayRef<c10::IValue> args, std::vector<c10::IValue>& outputs,
                  const std::vector<bool>& fresh) {
  if (d.layout == Layout::Dense) return;
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto& o = outputs[i];
    if (!fresh[i] || !o.isTensor() || !o.toTensor().defined()) continue;
    const at::Tensor& t = o.toTensor();
    if (t.dim() != 4 && t.dim() != 5) continue;
    at::MemoryFormat want = wanted_layout(d, args, t.sizes());
    const bool fits = (want == at::MemoryFormat::ChannelsLast && t.dim() == 4) ||
                      (want == at::MemoryFormat::ChannelsLast3d && t.dim() == 5);
    if (!fits || t.is_contiguous(want)) continue;
    at::Tensor r = at::empty(t.sizes(), t.options().memory_format(want));
    r.copy_(t);
    o = r;
  }
}

// `wide`: a Python int past int64's range (a uint64 Scalar) travels as a uint64 number, its
// bits in `i`, instead of raising toLong's overflow error (see `wide_number_arg`).
TpursArg scalar_arg(const c10::Scalar& s, bool wide = false) {
  TpursArg a{};
  a.kind = TPURS_SCALAR;
  a.wrapped = 1;
  if (s.isFloatingPoint()) {
    a.dtype = static_cast<int32_t>(at::kDouble);
    a.f = s.toDouble();
  } else if (s.isBoolean()) {
    a.dtype = static_cast<int32_t>(at::kBool);
    a.i = s.toBool();
  } else if (wide && s.type() == at::kUInt64) {
    a.dtype = static_cast<int32_t>(at::kUInt64);
    a.i = static_cast<int64_t>(s.toUInt64());
  } else if (s.isIntegral(false)) {
    a.dtype = static_cast<int32_t>(at::kLong);
    a.i = s.toLong();
  } else {
    // A complex number: rules that handle complex values take it; for the others the
    // runtime refuses the call as uncovered and it runs on the CPU.
    const c10::complex<double> z = s.toComplexDouble();
    a.dtype = static_cast<int32_t>(at::kComplexDouble);
    a.f = z.real();
    a.im = z.imag();
  }
  return a;
}

// CPU's warning for `random_(from, to)` on a float tensor whose bounds lie past the
// integers its type holds exactly (2^digits).
void warn_float_random_range(c10::ArrayRef<c10::IValue> args) {
  const at::ScalarType type = args[0].toTensor().scalar_type();
  int digits = 0;
  const char* name = "";
  switch (type) {
    case at::kFloat: digits = 24, name = "float"; break;
    case at::kDouble: digits = 53, name = "double"; break;
    case at::kHalf: digits = 11, name = "c10::Half"; break;
    case at::kBFloat16: digits = 8, name = "c10::BFloat16"; break;
    default: return;
  }
  const auto warn_if_out = [&](int64_t v, const char* what) {
    if (v < -(int64_t{1} << digits) || v > (int64_t{1} << digits)) {
      TORCH_WARN(what, " is out of bounds [-(2^", digits, "), 2^", digits, "]. Due to precision limitations ", name,
                 " can support discrete uniform distribution only within this range. This warning will become an "
                 "error in version 1.7 release, please fix the code in advance");
    }
  };
  warn_if_out(args[1].toInt(), "from");
  if (!args[2].isNone()) warn_if_out(args[2].toInt() - 1, "to - 1");
}

// CPU's warning when `correction` leaves no degrees of freedom: (self, dim, correction, ...).
void warn_degrees_of_freedom(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  const at::Tensor& self = args[0].toTensor();
  int64_t reduced = self.numel();  // CPU counts 0 for any empty input
  if (reduced > 0 && !args[1].isNone() && !args[1].toIntList().empty()) {
    reduced = 1;
    for (int64_t dim : args[1].toIntList()) {
      reduced *= self.dim() == 0 ? 1 : self.size(c10::maybe_wrap_dim(dim, self.dim()));
    }
  }
  const double correction = args[2].isNone() ? 1.0 : args[2].toScalar().toDouble();
  if (static_cast<double>(reduced) - correction <= 0) {
    TORCH_WARN(schema.name().substr(6), "(): degrees of freedom is <= 0. Correction should be strictly less than the ",
               "reduction factor (input numel divided by output numel).");
  }
}

// `fill_(value)` converts the value to the tensor's type as CPU does, with its overflow error.
void check_fill_value(c10::ArrayRef<c10::IValue> args, int32_t i) {
  const at::Scalar value = args[i].toScalar();
  AT_DISPATCH_V2(args[0].toTensor().scalar_type(), "fill_", AT_WRAP([&] { (void)value.to<scalar_t>(); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), AT_EXPAND(AT_FLOAT8_TYPES),
                 AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES), at::kComplexHalf, at::kHalf, at::kBool, at::kBFloat16);
}

[[noreturn]] void device_mismatch(int32_t tpu_device) {
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, tpu:",
              tpu_device < 0 ? 0 : tpu_device, " and cpu!");
}

TpursArg pack_tensor(const at::Tensor& t, Packer& p) {
  TpursArg a{};
  if (!t.defined()) return a;  // kind NONE
  if (t.device().type() == c10::DeviceType::PrivateUse1) {
    if (p.device < 0) p.device = t.device().index();
    return tensor_arg(t);
  }
  // A 0-d CPU tensor is a host number, as on CUDA; complex ones go over as 0-d device
  // tensors, which promote the same way, unless they are wrapped Python numbers.
  if (t.device().is_cpu() && t.dim() == 0 && t.is_complex() && !t.unsafeGetTensorImpl()->is_wrapped_number()) {
    return tensor_arg(p.move_to_device(t));
  }
  if (t.device().is_cpu() && t.dim() == 0) {
    a.kind = TPURS_SCALAR;
    a.dtype = static_cast<int32_t>(t.scalar_type());
    a.wrapped = t.unsafeGetTensorImpl()->is_wrapped_number();
    if (at::isFloatingType(t.scalar_type())) {
      a.f = t.item<double>();
    } else if (t.scalar_type() == at::kBool) {
      a.i = t.item<bool>();
    } else if (at::isIntegralType(t.scalar_type(), false)) {
      a.i = t.item<int64_t>();
    } else if (at::isComplexType(t.scalar_type())) {
      const c10::complex<double> z = t.item<c10::complex<double>>();
      a.f = z.real();
      a.im = z.imag();
    } else {
      TORCH_CHECK_TYPE(false, "tpurs does not support ", t.scalar_type(), " scalars");
    }
    return a;
  }
  device_mismatch(p.device);
}

TpursArg pack(const c10::IValue& v, ArgHint hint, Packer& p) {
  TpursArg a{};
  if (v.isNone()) return a;
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (hint == ArgHint::MovableIndex && t.defined() && t.device().is_cpu() && t.dim() > 0) {
      return pack_tensor(p.move_to_device(t), p);
    }
    return pack_tensor(t, p);
  }
  if (hint == ArgHint::Scalar && v.isScalar()) return scalar_arg(v.toScalar());
  const bool is_dtype = hint == ArgHint::Dtype;
  if (hint == ArgHint::Scalar && (v.isDoubleList() || v.isIntList() || v.isList())) {
    auto& l = p.next(p.lists, p.nlists);
    for (const c10::IValue& item : v.toListRef()) l.push_back(scalar_arg(item.toScalar()));
    a.kind = TPURS_LIST;
    a.ndim = static_cast<int64_t>(l.size());
    a.items = l.data();
    return a;
  }
  if (v.isInt()) {
    a.kind = is_dtype ? TPURS_DTYPE : TPURS_INT;
    a.i = v.toInt();
    if (is_dtype) a.dtype = static_cast<int32_t>(v.toInt());
    return a;
  }
  if (v.isSymInt()) {
    a.kind = TPURS_INT;
    a.i = v.toSymInt().guard_int(__FILE__, __LINE__);
    return a;
  }
  if (v.isDouble()) {
    a.kind = TPURS_FLOAT;
    a.f = v.toDouble();
    return a;
  }
  if (v.isBool()) {
    a.kind = TPURS_BOOL;
    a.i = v.toBool();
    return a;
  }
  if (v.isString()) {
    auto& s = p.strs.size() == p.nstrs ? p.strs.emplace_back() : p.strs[p.nstrs];
    ++p.nstrs;
    s = v.toStringRef();
    a.kind = TPURS_STR;
    a.ndim = static_cast<int64_t>(s.size());
    a.items = s.data();
    return a;
  }
  if (v.isIntList()) {
    auto& l = p.next(p.ints, p.nints);
    for (auto x : v.toIntList()) l.push_back(x);
    a.kind = TPURS_INT_LIST;
    a.ndim = static_cast<int64_t>(l.size());
    a.sizes = l.data();
    return a;
  }
  if (v.isDoubleList()) {
    auto& l = p.next(p.floats, p.nfloats);
    for (auto x : v.toDoubleList()) l.push_back(x);
    a.kind = TPURS_FLOAT_LIST;
    a.ndim = static_cast<int64_t>(l.size());
    a.items = l.data();
    return a;
  }
  if (v.isBoolList()) {
    auto& l = p.next(p.bools, p.nbools);
    for (bool x : v.toBoolList()) l.push_back(x);
    a.kind = TPURS_BOOL_LIST;
    a.ndim = static_cast<int64_t>(l.size());
    a.items = l.data();
    return a;
  }
  if (v.isTensorList() || v.isList()) {
    auto& l = p.next(p.lists, p.nlists);
    // Index lists (`Tensor?[]`) may hold CPU index tensors, as on CUDA: move them over.
    const bool index_list = !v.isTensorList();
    for (const c10::IValue& item : v.toListRef()) {
      if (item.isTensor()) {
        const at::Tensor& t = item.toTensor();
        if (index_list && t.defined() && t.device().is_cpu() && t.dim() > 0) {
          l.push_back(pack_tensor(p.move_to_device(t), p));
          continue;
        }
        l.push_back(pack_tensor(t, p));
      } else if (item.isNone()) {
        l.push_back(TpursArg{});
      } else if (item.isScalar()) {
        l.push_back(scalar_arg(item.toScalar()));
      } else if (item.isSymInt()) {
        TpursArg x{};
        x.kind = TPURS_INT;
        x.i = item.toSymInt().guard_int(__FILE__, __LINE__);
        l.push_back(x);
      } else {
        TORCH_CHECK_TYPE(false, "tpurs: unsupported list item ", item.tagKind());
      }
    }
    a.kind = TPURS_LIST;
    a.ndim = static_cast<int64_t>(l.size());
    a.items = l.data();
    return a;
  }
  if (v.isDevice()) {
    a.kind = TPURS_INT;
    a.i = v.toDevice().index();
    return a;
  }
  if (v.isGenerator() || v.isObject()) return a;  // generators are per device in Rust
  if (v.isScalar()) return scalar_arg(v.toScalar());
  TORCH_CHECK_TYPE(false, "tpurs: unsupported argument kind ", v.tagKind());
}

// An op that writes a tensor partly aliasing one of its inputs would read values it has
// already overwritten: CPU refuses it ("unsupported operation: some elements of the input
// tensor and the written-to tensor refer to a single memory location"), and so does tpu.
void check_overlaps(const OpDesc& d, c10::ArrayRef<c10::IValue> args) {
  for (size_t k = 0; k < d.mutable_args.size(); ++k) {
    const int32_t ai = d.mutable_args[k];
    if (!args[ai].isTensor() || !args[ai].toTensor().defined()) continue;
    const at::Tensor& written = args[ai].toTensor();
    // An out= tensor, or a pointwise op's self, whose elements repeat (`expand`).
    if (d.no_internal_overlap || d.mutable_is_out[k]) at::assert_no_internal_overlap(written);
    for (size_t i = 0; i < args.size(); ++i) {
      if (static_cast<int32_t>(i) == ai || !args[i].isTensor()) continue;
      const at::Tensor& input = args[i].toTensor();
      if (!input.defined() || !input.is_privateuseone()) continue;
      if (d.no_full_overlap) {
        at::assert_no_overlap(written, input);
      } else {
        at::assert_no_partial_overlap(written, input);
      }
    }
  }
}

// A negative view (`_neg_view`, what torch's math-bit fallback makes) stores its values
// negated and says so in a bit; rules read storage, so such an input is negated first
// (before packing: it runs a table op itself).
void resolve_negative_inputs(const OpDesc& d, torch::jit::Stack* stack, size_t nargs) {
  const size_t base = stack->size() - nargs;
  for (size_t i = 0; i < nargs; ++i) {
    c10::IValue& v = (*stack)[base + i];
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    if (!v.toTensor().is_neg() && !v.toTensor().is_conj()) continue;
    if (std::find(d.mutable_args.begin(), d.mutable_args.end(), static_cast<int32_t>(i)) != d.mutable_args.end()) continue;
    // A conjugate view (`.conj()` of a complex tensor, and the ops that reach a kernel
    // without torch resolving it) keeps its sign in a bit the same way.
    if (v.toTensor().is_conj()) v = at::_conj_physical(v.toTensor().conj());
    if (v.toTensor().is_neg()) v = v.toTensor()._neg_view().neg();
  }
}

void run_table_op(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  auto it = descs().find(&schema);
  TORCH_CHECK(it != descs().end(), "tpurs: no descriptor for ", schema.name());
  const OpDesc& d = it->second;
  const size_t nargs = schema.arguments().size();
  resolve_negative_inputs(d, stack, nargs);
  auto args = torch::jit::last(*stack, nargs);

  if (d.fill_value_arg >= 0) check_fill_value(args, d.fill_value_arg);
  if (d.nondeterministic) at::globalContext().alertNotDeterministic(d.nondeterministic);
  Packer& p = packer;
  p.reset();
  // The first pass finds the device so that a CPU tensor is reported against it.
  for (size_t i = 0; i < nargs; ++i) {
    if (args[i].isTensor() && args[i].toTensor().defined() && args[i].toTensor().is_privateuseone()) {
      p.device = args[i].toTensor().device().index();
      break;
    }
  }
  for (size_t i = 0; i < nargs; ++i) {
    const bool wide = static_cast<int32_t>(i) == d.wide_number_arg;
    p.args.push_back(wide ? scalar_arg(args[i].toScalar(), true) : pack(args[i], d.hints[i], p));
  }
  for (size_t k = 0; k < d.mutable_args.size(); ++k) {
    int32_t ai = d.mutable_args[k];
    const TpursArg& a = p.args[ai];
    if (a.kind == TPURS_LIST) {
      for (int32_t j = 0; j < a.ndim; ++j) p.writes.push_back({ai, j, d.mutable_is_out[k] ? 1 : 0});
    } else if (a.kind == TPURS_TENSOR) {
      p.writes.push_back({ai, -1, d.mutable_is_out[k] ? 1 : 0});
    }
  }
  check_overlaps(d, args);
  // Returns alias mutable args by index into `mutable_args`; map to write indices.
  for (int32_t r : d.return_alias) {
    if (r >= 0) {
      int32_t ai = d.mutable_args[r];
      int32_t w = 0;
      while (w < static_cast<int32_t>(p.writes.size()) && p.writes[w].arg != ai) ++w;
      p.returns.push_back(w);
    } else {
      p.returns.push_back(r);
    }
  }

  TpursOpResults res{};
  int32_t default_dtype = static_cast<int32_t>(c10::typeMetaToScalarType(c10::get_default_dtype()));
  // torch.set_float32_matmul_precision: HIGHEST, HIGH, MEDIUM as 0, 1, 2.
  int32_t precision = static_cast<int32_t>(at::globalContext().float32MatmulPrecision());
  int32_t rc = g_api->run_op(g_rt, d.id, p.args.data(), static_cast<int64_t>(p.args.size()), p.writes.data(),
                             static_cast<int64_t>(p.writes.size()), p.returns.data(),
                             static_cast<int64_t>(p.returns.size()), default_dtype, precision, &res);
  // A rule that does not cover this call (a complex input, say) refuses it before anything
  // runs: the CPU takes it as it takes ops with no rule (under TPURS_FALLBACK=error the
  // rule's own reason is raised).
  if (rc == TPURS_UNCOVERED && !fallback_forbidden()) {
    cpu_fallback(op, stack);
    return;
  }
  if (d.warns_byte_indices) {
    for (const c10::IValue& item : args[1].toListRef()) {
      if (item.isTensor() && item.toTensor().defined() && item.toTensor().scalar_type() == at::kByte) {
        TORCH_WARN("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.");
      }
    }
  }
  if (d.warns_float_random) warn_float_random_range(args);
  if (d.warns_degrees_of_freedom) warn_degrees_of_freedom(schema, args);
  if (rc != TPURS_OK) throw_error(rc);

  // out= arguments whose shape changed get the new storage, as resize_ would.
  for (int64_t r = 0; r < res.nreplace; ++r) {
    const TpursReplace& rep = res.replaces[r];
    const TpursWrite& w = p.writes[rep.target];
    at::Tensor t = w.item < 0 ? args[w.arg].toTensor() : args[w.arg].toListRef()[w.item].toTensor();
    auto* impl = t.unsafeGetTensorImpl();
    c10::Device dev = t.device();
    impl->storage().set_data_ptr_noswap(c10::DataPtr(rep.storage, rep.storage, g_api->storage_free, dev));
    impl->storage().set_nbytes(static_cast<size_t>(rep.nbytes));
    impl->set_storage_offset(0);
    impl->set_sizes_contiguous(c10::IntArrayRef(rep.sizes, static_cast<size_t>(rep.ndim)));
  }

  std::vector<c10::IValue> outputs;
  std::vector<bool> fresh;
  outputs.reserve(schema.returns().size());
  for (int64_t i = 0; i < res.n; ++i) {
    const TpursResult& r = res.results[i];
    fresh.push_back(r.kind == TPURS_FRESH);
    switch (r.kind) {
      case TPURS_FRESH:
        outputs.emplace_back(wrap_storage(r.storage, r.nbytes, r.dtype, r.device, r.sizes, r.ndim));
        break;
      case TPURS_ALIAS: {
        const TpursWrite& w = p.writes[r.alias];
        outputs.emplace_back(args[w.arg]);
        break;
      }
      case TPURS_RESULT_LIST: {
        c10::List<at::Tensor> list;
        for (int64_t j = 0; j < r.ndim; ++j) {
          const TpursResult& e = res.results[++i];
          list.push_back(wrap_storage(e.storage, e.nbytes, e.dtype, e.device, e.sizes, e.ndim));
        }
        outputs.emplace_back(std::move(list));
        break;
      }
      default:
        outputs.emplace_back(at::Tensor());
    }
  }
  match_layout(d, args, outputs, fresh);
  torch::jit::drop(*stack, nargs);
  for (auto& o : outputs) stack->push_back(std::move(o));
}

}  // namespace

void register_table_ops() {
  static std::unique_ptr<torch::Library> lib = std::make_unique<torch::Library>(
      torch::Library::IMPL, "aten", std::make_optional(c10::DispatchKey::PrivateUse1), __FILE__, __LINE__);
  static std::unique_ptr<torch::Library> own = std::make_unique<torch::Library>(
      torch::Library::IMPL, "tpurs", std::make_optional(c10::DispatchKey::PrivateUse1), __FILE__, __LINE__);
  auto& dispatcher = c10::Dispatcher::singleton();
  uint32_t n = g_api->num_ops();
  for (uint32_t i = 0; i < n; ++i) {
    std::string full = g_api->op_name(i);
    if (full.empty()) continue;  // a graph-only rule
    // Names are ATen's unless they carry their own namespace (`tpurs::graph`).
    const bool own_op = full.rfind("tpurs::", 0) == 0;
    std::string bare = own_op ? full.substr(7) : full;
    auto dot = bare.find('.');
    std::string name = bare.substr(0, dot);
    std::string overload = dot == std::string::npos ? "" : bare.substr(dot + 1);
    auto handle = dispatcher.findSchema({(own_op ? "tpurs::" : "aten::") + name, overload});
    if (!handle) continue;  // not in this torch version
    // A CompositeImplicitAutograd op must decompose before reaching the backend, or
    // autograd would lose its formula.
    if (handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) continue;
    descs()[&handle->schema()] = describe(handle->schema(), i, handle->hasTag(at::Tag::pointwise));
    (own_op ? own : lib)->impl(bare.c_str(), torch::CppFunction::makeFromBoxedFunction<&run_table_op>());
  }
}

}  // namespace tpurs

// Schemas of tpurs' own ops; their kernels come from the Rust table like ATen's.
TORCH_LIBRARY(tpurs, m) {
  // Runs a graph registered with `tpurs._core.register_graph` as one program.
  m.def("graph(int id, Tensor[] inputs) -> Tensor[]");
  // Calls a function registered with `tpurs._core.register_stablehlo` (torch.tpu.ops.stablehlo).
  m.def("stablehlo(int id, Tensor[] inputs) -> Tensor[]");
  // `self.copy_(src)` between any dtypes and views; torch reaches it through `_copy_from`.
  m.def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)");
}
