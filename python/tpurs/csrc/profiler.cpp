// torch.profiler on tpu: a kineto activity profiler registered for PrivateUse1. While a
// profile with ProfilerActivity.PrivateUse1 records, the runtime records a span for every
// program run (with the ops it fused), compile and copy; they become kineto activities, so
// they appear in key_averages() (device time) and in export_chrome_trace().
#if __has_include(<torch/csrc/profiler/standalone/privateuse1_profiler.h>)
#define USE_KINETO 1
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#include <libkineto.h>
#include <output_base.h>

#include <deque>
#include <string>
#include <unistd.h>

#include "bridge.h"

namespace tpurs {
namespace {

libkineto::ActivityType activity_of(int32_t kind) {
  switch (kind) {
    case 0:
      return libkineto::ActivityType::CONCURRENT_KERNEL;
    case 2:
      return libkineto::ActivityType::GPU_MEMCPY;
    default:
      return libkineto::ActivityType::PRIVATEUSE1_RUNTIME;  // compiles run on the host
  }
}

// Activities keep a pointer to their span, which must outlive the trace.
const libkineto::TraceSpan& trace_span() {
  static const libkineto::TraceSpan span(0, 0, "tpurs");
  return span;
}

class Session final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    if (g_api) g_api->profile_record(g_rt, 1);  // kineto calls must not throw
    status_ = libkineto::TraceStatus::RECORDING;
  }
  void stop() override {
    if (g_api) g_api->profile_record(g_rt, 0);
    status_ = libkineto::TraceStatus::PROCESSING;
  }
  std::vector<std::string> errors() override { return {}; }
  void processTrace(libkineto::ActivityLogger& logger) override {
    if (!g_api) return;
    g_api->profile_drain(g_rt, &Session::collect, this);
    for (const auto& a : activities_) logger.handleGenericActivity(a);
    status_ = libkineto::TraceStatus::READY;
  }
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{0, 0, "tpu", "tpu"});
  }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

 private:
  static void collect(void* user, const TpursSpan* s) {
    auto* self = static_cast<Session*>(user);
    auto& a = self->activities_.emplace_back(trace_span(), activity_of(s->kind), s->name);
    a.startTime = s->start_ns;
    a.endTime = s->end_ns;
    a.id = static_cast<int64_t>(self->activities_.size());
    if (s->kind == 1) {
      a.device = getpid();  // host-side activities sit on the process row
      a.resource = gettid();
    } else {
      a.device = s->device;
      a.resource = 0;
    }
    if (s->detail[0] != '\0') a.addMetadataQuoted(s->kind == 0 ? "ops" : "detail", s->detail);
    // A number in the trace where kineto has typed metadata (addMetadata would need fmt,
    // which torch does not export); a quoted number before that (torch 2.12 to 2.14).
#if __has_include(<TypedMetadata.h>)
    if (s->kind == 2) a.addTypedMetadata("bytes", libkineto::RawJson{std::to_string(s->bytes)});
#else
    if (s->kind == 2) a.addMetadataQuoted("bytes", std::to_string(s->bytes));
#endif
  }

  std::deque<libkineto::GenericTraceActivity> activities_;
};

class TpuProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<libkineto::ActivityType>& availableActivities() const override { return activities_; }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config& /*config*/) override {
    // Only with ProfilerActivity.PrivateUse1: torch also asks for PRIVATEUSE1_RUNTIME in a
    // CPU-only profile, which must not make launches wait.
    if (types.count(libkineto::ActivityType::CONCURRENT_KERNEL) == 0) return nullptr;
    return std::make_unique<Session>();
  }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t /*ts_ms*/, int64_t /*duration_ms*/,
                                                                 const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_ = "tpurs";
  std::set<libkineto::ActivityType> activities_{libkineto::ActivityType::CONCURRENT_KERNEL,
                                                libkineto::ActivityType::GPU_MEMCPY,
                                                libkineto::ActivityType::PRIVATEUSE1_RUNTIME};
};

REGISTER_PRIVATEUSE1_PROFILER(TpuProfiler);

}  // namespace
}  // namespace tpurs
#endif
