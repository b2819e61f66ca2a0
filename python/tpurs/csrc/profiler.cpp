// torch.profiler on tpu: a kineto activity profiler registered for PrivateUse1. While a
// profile with ProfilerActivity.PrivateUse1 records, the runtime records a span for every
// program run (with the ops it fused), compile and copy; they become kineto activities, so
// they appear in key_averages() (device time) and in export_chrome_trace().
// `torch.tpu.profiler.TpuProfilerConfig` passes options through the experimental config's
// custom string: tracer levels choose what is recorded, `run_dir` gets a trace file too.
#if __has_include(<torch/csrc/profiler/standalone/privateuse1_profiler.h>)
#define USE_KINETO 1
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#include <libkineto.h>
#include <output_base.h>

#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
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

// What a profile records, from TpuProfilerConfig's "key:value,..." string.
struct Options {
  bool device = true;  // device_tracer_level > 0: program runs and copies
  bool host = true;    // host_tracer_level > 0: compiles
  std::string run_dir;
};

Options parse_options(const std::string& text) {
  Options o;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    auto colon = item.find(':');
    if (colon == std::string::npos) continue;
    auto key = item.substr(0, colon), value = item.substr(colon + 1);
    if (key == "device_tracer_level") o.device = value != "0";
    if (key == "host_tracer_level") o.host = value != "0";
    if (key == "run_dir") o.run_dir = value;
  }
  return o;
}

// The experimental config's custom string where kineto carries one (torch 2.13 and later).
template <typename C>
auto custom_config(const C& config, int) -> decltype(config.getCustomConfig()) {
  return config.getCustomConfig();
}
template <typename C>
std::string custom_config(const C&, long) {
  return {};
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", c);
      out += code;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

class Session final : public libkineto::IActivityProfilerSession {
 public:
  explicit Session(Options options) : options_(std::move(options)) {}

  void start() override {
    int32_t what = (options_.device ? TPURS_RECORD_DEVICE : 0) | (options_.host ? TPURS_RECORD_HOST : 0);
    // kineto calls must not throw; a profile that records nothing still starts and stops.
    if (g_api && what != 0) g_api->profile_record(g_rt, what);
    status_ = libkineto::TraceStatus::RECORDING;
  }
  void stop() override {
    if (g_api) g_api->profile_record(g_rt, 0);
    status_ = libkineto::TraceStatus::PROCESSING;
  }
  std::vector<std::string> errors() override { return errors_; }
  void processTrace(libkineto::ActivityLogger& logger) override {
    if (!g_api) return;
    g_api->profile_drain(g_rt, &Session::collect, this);
    for (const auto& a : activities_) logger.handleGenericActivity(a);
    if (!options_.run_dir.empty()) write_run_dir_trace();
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
    if (!self->options_.run_dir.empty()) {
      if (self->first_ns_ == 0) self->first_ns_ = s->start_ns;
      self->add_run_dir_event(s, a.device, a.resource);
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

  // One span as a Chrome trace event, for the run_dir file.
  void add_run_dir_event(const TpursSpan* s, int64_t pid, int64_t tid) {
    const char* category = s->kind == 0 ? "kernel" : s->kind == 2 ? "gpu_memcpy" : "privateuse1_runtime";
    std::ostringstream e;
    e << std::fixed << std::setprecision(3);  // microseconds since the epoch need 16 digits
    e << (run_dir_events_.empty() ? "\n" : ",\n") << "{\"ph\":\"X\",\"name\":" << json_string(s->name)
      << ",\"cat\":\"" << category << "\",\"pid\":" << pid << ",\"tid\":" << tid
      << ",\"ts\":" << s->start_ns / 1000.0 << ",\"dur\":" << (s->end_ns - s->start_ns) / 1000.0
      << ",\"args\":{\"detail\":" << json_string(s->detail) << ",\"bytes\":" << s->bytes << "}}";
    run_dir_events_ += e.str();
  }

  // The device's spans as a Chrome trace of their own, `run_dir/tpurs.<pid>.<ns>.trace.json`.
  void write_run_dir_trace() {
    std::error_code error;
    std::filesystem::create_directories(options_.run_dir, error);
    auto path = std::filesystem::path(options_.run_dir) /
                ("tpurs." + std::to_string(getpid()) + "." + std::to_string(first_ns_) + ".trace.json");
    std::ofstream out(path);
    out << "{\"traceEvents\":[" << run_dir_events_ << "\n]}\n";
    if (!out) errors_.push_back("tpurs: could not write the profile trace to " + path.string());
  }

  Options options_;
  std::string run_dir_events_;
  int64_t first_ns_ = 0;
  std::vector<std::string> errors_;
  std::deque<libkineto::GenericTraceActivity> activities_;
};

class TpuProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<libkineto::ActivityType>& availableActivities() const override { return activities_; }
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    // Only with ProfilerActivity.PrivateUse1: torch also asks for PRIVATEUSE1_RUNTIME in a
    // CPU-only profile, which must not make launches wait.
    if (types.count(libkineto::ActivityType::CONCURRENT_KERNEL) == 0) return nullptr;
    return std::make_unique<Session>(parse_options(custom_config(config, 0)));
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
