// The C ABI between the torch bridge and the Rust runtime (crates/tpurs-runtime/src/abi.rs).
// Plain C structs only: this header must not depend on torch. Change both sides together.
#pragma once
#include <stdint.h>

#define TPURS_API_VERSION 5

// A Rust runtime (opaque); calls that need one take the runtime the bridge was started with.
typedef struct TpursRuntime TpursRuntime;

enum TpursArgKind {
  TPURS_NONE = 0,
  TPURS_TENSOR = 1,
  TPURS_SCALAR = 2,
  TPURS_INT = 3,
  TPURS_FLOAT = 4,
  TPURS_BOOL = 5,
  TPURS_STR = 6,
  TPURS_DTYPE = 7,
  TPURS_INT_LIST = 8,
  TPURS_FLOAT_LIST = 9,
  TPURS_BOOL_LIST = 10,
  TPURS_LIST = 11,
};

enum TpursResultKind { TPURS_UNDEFINED = 0, TPURS_FRESH = 1, TPURS_ALIAS = 2, TPURS_RESULT_LIST = 3 };

#define TPURS_RETURN_FRESH (-1)
#define TPURS_RETURN_FRESH_LIST (-2)

// Error kinds returned by calls (0 = success).
enum TpursErrorKind { TPURS_OK = 0, TPURS_RUNTIME = 1, TPURS_INDEX = 2, TPURS_VALUE = 3, TPURS_TYPE = 4, TPURS_NOT_IMPLEMENTED = 5,
                      TPURS_OUT_OF_MEMORY = 6, TPURS_UNCOVERED = 7 };

typedef struct TpursArg {
  int32_t kind;
  int32_t dtype;
  int32_t device;
  int32_t wrapped;
  int64_t ndim;
  const int64_t* sizes;
  const int64_t* strides;
  int64_t offset;
  const void* storage;
  int64_t i;
  double f;   // a float, or a complex number's real part
  double im;  // a complex number's imaginary part
  const void* items;
} TpursArg;

typedef struct TpursWrite {
  int32_t arg;
  int32_t item;
  int32_t is_out;
} TpursWrite;

typedef struct TpursResult {
  int32_t kind;
  int32_t dtype;
  int32_t alias;
  int32_t device;
  int64_t ndim;
  const int64_t* sizes;
  void* storage;
  int64_t nbytes;
} TpursResult;

typedef struct TpursReplace {
  int32_t target;
  int32_t dtype;
  int64_t ndim;
  const int64_t* sizes;
  void* storage;
  int64_t nbytes;
} TpursReplace;

typedef struct TpursOpResults {
  int64_t n;
  const TpursResult* results;
  int64_t nreplace;
  const TpursReplace* replaces;
} TpursOpResults;

// [current, peak, allocated, freed] of a device's live storages: bytes and count.
typedef struct TpursMemoryStats {
  int64_t bytes[4];
  int64_t count[4];
} TpursMemoryStats;

// One profiled span (strings valid during the drain callback only). kind: 0 a program ran,
// 1 a compile, 2 a copy (bytes set).
typedef struct TpursSpan {
  int32_t kind;
  int32_t device;
  int64_t bytes;
  int64_t start_ns;
  int64_t end_ns;
  const char* name;
  const char* detail;
} TpursSpan;

enum TpursMemoryReset { TPURS_RESET_PEAK = 1, TPURS_RESET_ACCUMULATED = 2 };
// What profile_record records (bits; 0 stops): program runs and copies, compiles.
enum TpursProfileRecord { TPURS_RECORD_DEVICE = 1, TPURS_RECORD_HOST = 2 };

typedef struct TpursCoreApi {
  uint32_t version;
  uint32_t (*num_ops)(void);
  const char* (*op_name)(uint32_t);
  int32_t (*run_op)(const TpursRuntime* rt, uint32_t op, const TpursArg* args, int64_t nargs,
                    const TpursWrite* writes, int64_t nwrites, const int32_t* returns, int64_t nreturns,
                    int32_t default_dtype, int32_t matmul_precision, TpursOpResults* out);
  // NULL (with the reason in last_error) for an invalid device.
  void* (*storage_new)(const TpursRuntime* rt, int32_t device, int64_t nbytes);
  void (*storage_free)(void*);
  int32_t (*copy_from_host)(const TpursRuntime* rt, const TpursArg* dst, const void* src, int64_t nbytes);
  // Starts the upload and returns while `src` may still be read; `release(owner)` runs once
  // it is not (also on failure).
  int32_t (*copy_from_host_async)(const TpursRuntime* rt, const TpursArg* dst, const void* src, int64_t nbytes,
                                  void* owner, void (*release)(void*));
  int32_t (*copy_to_host)(const TpursRuntime* rt, const TpursArg* src, void* dst, int64_t nbytes);
  int32_t (*copy_between)(const TpursRuntime* rt, const TpursArg* dst, const TpursArg* src);
  const char* (*last_error)(void);
  uint64_t (*record_fallback)(const TpursRuntime* rt, const char* op);
  int32_t (*device_count)(const TpursRuntime* rt);
  int32_t (*rng_get)(const TpursRuntime* rt, int32_t device, uint64_t* seed, uint64_t* offset);
  int32_t (*rng_set)(const TpursRuntime* rt, int32_t device, uint64_t seed, uint64_t offset);
  int32_t (*memory_stats)(const TpursRuntime* rt, int32_t device, TpursMemoryStats* out);
  int32_t (*memory_reset)(const TpursRuntime* rt, int32_t device, int32_t what);
  int32_t (*memory_info)(const TpursRuntime* rt, int32_t device, uint64_t* free, uint64_t* total);
  int32_t (*profile_record)(const TpursRuntime* rt, int32_t what);
  int32_t (*profile_drain)(const TpursRuntime* rt, void (*callback)(void* user, const TpursSpan* span), void* user);
  // Waits for all work launched on the device; raises its pending checks.
  int32_t (*synchronize)(const TpursRuntime* rt, int32_t device);
} TpursCoreApi;
