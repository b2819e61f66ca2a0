// scaled_dot_product_attention's backend choice for the device. ATen asks a per-device stub;
// without one every call takes the math path (a dozen ops, keys and values repeated for
// grouped-query heads). Where the fused rule applies, the choice is "flash", which ATen
// routes to _scaled_dot_product_flash_attention_for_cpu: one lowering rule forward and one
// backward, with CPU PyTorch's semantics. Everything else stays on the math path, which also
// raises PyTorch's errors for malformed calls.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>

namespace tpurs {
namespace {

// Whether `mask` broadcasts to the (B, H, L, S) scores the fused rule adds it to.
bool mask_fits(const at::Tensor& mask, const at::Tensor& query, const at::Tensor& key) {
  if (mask.dim() != 2 && mask.dim() != 4) return false;
  if (mask.scalar_type() != at::kBool && mask.scalar_type() != at::kFloat &&
      mask.scalar_type() != query.scalar_type())
    return false;
  const int64_t scores[4] = {query.size(0), query.size(1), query.size(2), key.size(2)};
  for (int64_t i = 0; i < mask.dim(); ++i) {
    const int64_t m = mask.size(i), s = scores[4 - mask.dim() + i];
    if (m != 1 && m != s) return false;
  }
  return true;
}

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool /*is_causal*/,
                         std::optional<double> /*scale*/, bool enable_gqa) {
  const auto math = static_cast<int64_t>(at::SDPBackend::math);
  if (!at::globalContext().userEnabledFlashSDP()) return math;
  if (query.dim() != 4 || key.dim() != 4 || value.dim() != 4 || dropout_p != 0.0) return math;
  const auto dtype = query.scalar_type();
  if (!at::isFloatingType(dtype) || key.scalar_type() != dtype || value.scalar_type() != dtype) return math;
  if (key.size(0) != query.size(0) || value.size(0) != query.size(0)) return math;
  if (key.size(3) != query.size(3) || value.size(3) != query.size(3)) return math;
  if (value.size(1) != key.size(1) || value.size(2) != key.size(2)) return math;
  if (query.numel() == 0 || key.numel() == 0) return math;
  const int64_t heads = query.size(1), kv_heads = key.size(1);
  if (kv_heads != heads && !(enable_gqa && kv_heads > 0 && heads % kv_heads == 0)) return math;
  // A learned bias (T5's position bias) needs its gradient: the fused rule gives none.
  if (attn_mask.has_value() && (attn_mask->requires_grad() || !mask_fits(*attn_mask, query, key))) return math;
  return static_cast<int64_t>(at::SDPBackend::flash_attention);
}

}  // namespace
}  // namespace tpurs

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &tpurs::fused_sdp_choice)
}
