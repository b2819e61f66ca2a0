// Shared declarations of the tpurs torch bridge: the Rust function table, error mapping
// and tensor <-> TpursArg conversion. The bridge is the only code tied to a torch version.
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/Allocator.h>

#include "tpurs_core_api.h"

namespace tpurs {

// The Rust runtime's function table and the runtime it serves, set once by
// tpurs_bridge_init.
extern const TpursCoreApi* g_api;
extern const TpursRuntime* g_rt;

// Throws the c10 exception matching a Rust error kind, with the runtime's message.
[[noreturn]] void throw_error(int32_t kind);

inline void check(int32_t rc) {
  if (rc != TPURS_OK) throw_error(rc);
}

// Describes a tpu tensor (metadata pointers stay valid while `t` lives).
TpursArg tensor_arg(const at::Tensor& t);

// The allocator whose buffers are Rust storages.
c10::Allocator* allocator();

// Page-aligned host memory (pin_memory) and whether `p` lies in such a block.
c10::Allocator* pinned_allocator();
bool is_pinned(const void* p);

// Wraps a Rust storage (ownership passes to torch) as a contiguous tensor.
at::Tensor wrap_storage(void* storage, int64_t nbytes, int32_t dtype, int32_t device, const int64_t* sizes,
                        int64_t ndim);

// Runs an op on the CPU (copies in and out), or refuses when TPURS_FALLBACK=error.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// True when TPURS_FALLBACK=error forbids CPU fallbacks.
bool fallback_forbidden();

// Registers a boxed kernel for every op of the Rust lowering table.
void register_table_ops();

}  // namespace tpurs
