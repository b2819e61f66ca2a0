// torch.linalg.lstsq on the device, composed of device ops (the SVD of the Rust table): its
// outputs' shapes depend on the driver and, for gelsd / gelss, on whether every matrix has
// full rank, which takes one host read as it does on the CPU. Semantics follow the CPU's
// drivers: gelsy (the default) returns the rank, gels the residuals, gelsd / gelss both and
// the singular values; the solution is the minimum-norm one (`rcond` cuts small singular
// values, relative to the largest, as LAPACK does).
#include <ATen/ATen.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include <limits>
#include <string>

#include "bridge.h"

namespace tpurs {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> lstsq_on_device(
    const at::Tensor& input, const at::Tensor& other, std::optional<double> rcond,
    std::optional<c10::string_view> driver_name) {
  TORCH_CHECK(input.dim() >= 2, "torch.linalg.lstsq: input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 1, "torch.linalg.lstsq: other must have at least 1 dimension.");
  TORCH_CHECK(input.scalar_type() == other.scalar_type(),
              "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype ",
              input.scalar_type(), " and other's dtype ", other.scalar_type());
  const auto dtype = input.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kComplexFloat ||
                  dtype == at::kComplexDouble,
              "This function doesn't handle types other than float and double");
  const bool vector_case = other.dim() == input.dim() - 1;
  const at::Tensor b = vector_case ? other.unsqueeze(-1) : other;
  TORCH_CHECK(input.size(-2) == b.size(-2), "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  const std::string driver = driver_name.has_value() ? std::string(*driver_name) : "gelsy";
  TORCH_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss",
              "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  const int64_t m = input.size(-2), n = input.size(-1), k = std::min(m, n);
  auto batch = at::infer_size(input.sizes().slice(0, input.dim() - 2), b.sizes().slice(0, b.dim() - 2));
  auto with = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> shape(batch.begin(), batch.end());
    shape.insert(shape.end(), tail);
    return shape;
  };
  const at::Tensor a = input.expand(with({m, n}));
  const at::Tensor rhs = b.expand(with({m, b.size(-1)}));
  const bool wide = dtype == at::kDouble || dtype == at::kComplexDouble;
  const double eps = wide ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  // Residuals and singular values are real, also for complex input.
  const auto real_options = input.options().dtype(c10::toRealValueType(dtype));
  const double cutoff = rcond.has_value() && *rcond >= 0 ? *rcond : eps * static_cast<double>(std::max(m, n));
  at::Tensor solution, rank, sv;
  if (k == 0) {
    solution = at::zeros(with({n, rhs.size(-1)}), input.options());
    rank = at::zeros(batch, input.options().dtype(at::kLong));
    sv = at::empty(with({0}), real_options);
  } else {
    auto [u, s, vh] = at::linalg_svd(a, /*full_matrices=*/false);
    const at::Tensor keep = s > s.amax(-1, /*keepdim=*/true) * cutoff;
    const at::Tensor inv = at::where(keep, s.reciprocal(), at::zeros_like(s));
    solution = at::matmul(vh.mH(), inv.unsqueeze(-1) * at::matmul(u.mH(), rhs));
    rank = keep.sum(-1);
    sv = s;
  }
  at::Tensor residuals = at::empty({0}, real_options);
  if (m > n && driver != "gelsy") {
    // gels assumes full rank; gelsd / gelss report residuals only if every matrix has it.
    const bool full = driver == "gels" || n == 0 || rank.eq(n).all().item<bool>();
    if (full) residuals = (at::matmul(a, solution) - rhs).abs().square().sum(-2);
  }
  if (driver == "gels") rank = at::empty({0}, input.options().dtype(at::kLong));
  if (driver != "gelsd" && driver != "gelss") sv = at::empty({0}, real_options);
  if (vector_case) solution = solution.squeeze(-1);
  return {solution, residuals, rank, sv};
}

void linalg_lstsq_boxed(const c10::OperatorHandle& /*op*/, torch::jit::Stack* stack) {
  auto args = torch::jit::last(*stack, 4);
  const at::Tensor input = args[0].toTensor();
  const at::Tensor other = args[1].toTensor();
  const std::optional<double> rcond = args[2].isNone() ? std::nullopt : std::optional<double>(args[2].toDouble());
  const std::optional<std::string> driver =
      args[3].isNone() ? std::nullopt : std::optional<std::string>(args[3].toStringRef());
  torch::jit::drop(*stack, 4);
  auto [solution, residuals, rank, sv] = lstsq_on_device(input, other, rcond, driver);
  torch::jit::push(*stack, solution, residuals, rank, sv);
}

}  // namespace
}  // namespace tpurs

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lstsq", torch::CppFunction::makeFromBoxedFunction<&tpurs::linalg_lstsq_boxed>());
}
