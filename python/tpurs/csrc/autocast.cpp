// Autocast on tpu (`torch.autocast("tpu", dtype=...)`): PyTorch's own op lists and cast
// policies (the ones CUDA uses: matmuls and convolutions in the low-precision dtype, norms,
// losses and reductions in float32, mixed-input ops promoted to the widest type), registered
// for the AutocastPrivateUse1 key. Every other op passes through to the tpu kernels.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

using at::Tensor;

// torch.autocast raises for binary_cross_entropy on CUDA because it is unsafe in low
// precision; tpu keeps that rule (use binary_cross_entropy_with_logits).
Tensor binary_cross_entropy_banned(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // The signatures in PyTorch's lists name ATen types unqualified.
#if __has_include(<ATen/core/Dimname.h>)
  using at::DimnameList;  // named-tensor overloads are in the lists up to torch 2.14
#endif
  using at::IntArrayRef;
  using at::Scalar;
  using at::ScalarType;
#define TPURS_LOW_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TPURS_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TPURS_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TPURS_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(TPURS_LOW_PRECISION)
  AT_FORALL_FP32(TPURS_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TPURS_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(TPURS_PROMOTE)
#undef TPURS_LOW_PRECISION
#undef TPURS_FP32
#undef TPURS_FP32_SET_OPT_DTYPE
#undef TPURS_PROMOTE
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_banned));
}
