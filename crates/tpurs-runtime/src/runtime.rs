//! The runtime value: a PJRT client and the per-device state that goes with it.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rustc_hash::FxHashMap;
use tpurs_ops::checks::Check;
use tpurs_pjrt::{Buffer, Client, NamedValue, PendingUpload};

use crate::cache::MemoryCache;
use crate::collectives::CollectiveCache;
use crate::defer::Batch;
use crate::error::{invalid, ErrorKind, Result};
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::profile::{Recorder, Span};
use crate::programs::ProgramStore;
use crate::storage::{DeviceMemory, Storage};

/// How ops are launched (TorchTPU's `EagerMode` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EagerMode {
    /// Each op compiled (cached) and launched on its own.
    DeferNever = 0,
    /// Ops are deferred and fused into one program until a value is needed.
    DeferAndFuse = 1,
    /// Op by op, waiting for each launch (errors point at the op).
    LaunchBlocking = 2,
}

/// Per-device generator state: the seed and how many random ops have drawn from it.
#[derive(Clone, Copy, Debug, Default)]
pub struct RngState {
    /// `manual_seed` value.
    pub seed: u64,
    /// Random ops launched since the seed was set.
    pub offset: u64,
}

/// A host number's device buffer, by value: ScalarType code, value bits (the real part of a
/// complex number), imaginary part bits, device.
pub(crate) type ScalarKey = (i32, u64, u64, usize);

/// A runtime: one PJRT client over its devices, with everything that goes with it (compile
/// caches, deferred batches, generators, counters, memory statistics). Nothing here is
/// global: the torch bridge is handed one instance (the default), and a process may hold
/// others beside it.
pub struct Runtime {
    /// The PJRT client.
    pub client: Client,
    /// Plugin path in use.
    pub plugin_path: String,
    mode: AtomicU8,
    fuse_limit: usize,
    pub(crate) metrics: Metrics,
    memory: Vec<Arc<DeviceMemory>>,
    pub(crate) cache: MemoryCache,
    next_batch: AtomicU64,
    rng: Vec<Mutex<RngState>>,
    pub(crate) last_output: Vec<Mutex<Option<Arc<Buffer>>>>,
    pub(crate) scalars: Mutex<FxHashMap<ScalarKey, Arc<Buffer>>>,
    batches: Vec<Mutex<Batch>>,
    /// Compile cache tiers 2 and 3.
    pub(crate) programs: ProgramStore,
    /// Compiled collectives.
    pub(crate) collectives: Mutex<CollectiveCache>,
    pub(crate) profile: Recorder,
    /// Device-side checks launched since the host last waited, in launch order.
    pub(crate) checks: Mutex<Vec<(Arc<Storage>, Check)>>,
    /// `non_blocking` uploads the plugin may still be reading host memory for.
    pub(crate) uploads: Mutex<Vec<PendingUpload>>,
}

/// Client options per platform. The CPU plugin takes its device count. The GPU plugin
/// would otherwise reserve 75% of the card at start; like torch's caching allocator it
/// grows on demand unless `TPURS_GPU_PREALLOCATE=1`, and `TPURS_GPU_MEMORY_FRACTION` caps it.
/// `TPURS_GPU_ALLOCATOR` picks the plugin's allocator (`bfc`, `cuda_async`, `platform`).
fn create_options(platform: &str, devices: usize, cpu_devices: Option<i64>) -> Vec<NamedValue> {
    match platform {
        "cpu" => match cpu_devices {
            Some(n) if n != devices as i64 => vec![NamedValue::int64("cpu_device_count", n)],
            _ => vec![],
        },
        "cuda" | "rocm" | "gpu" => {
            let preallocate = std::env::var("TPURS_GPU_PREALLOCATE").is_ok_and(|v| v == "1");
            let mut options = vec![NamedValue::bool("preallocate", preallocate)];
            if let Some(fraction) = std::env::var("TPURS_GPU_MEMORY_FRACTION")
                .ok()
                .and_then(|v| v.parse::<f32>().ok())
            {
                options.push(NamedValue::float("memory_fraction", fraction));
            }
            if let Ok(allocator) = std::env::var("TPURS_GPU_ALLOCATOR") {
                options.push(NamedValue::string("allocator", &allocator));
            }
            options
        }
        _ => vec![],
    }
}

impl Runtime {
    /// Loads the plugin and creates a client. `cpu_devices` sets how many devices the CPU
    /// plugin exposes (ignored by other plugins). Starts in [`EagerMode::DeferNever`].
    pub fn new(plugin_path: &str, cpu_devices: Option<i64>) -> Result<Runtime> {
        if !Path::new(plugin_path).exists() {
            return invalid(
                ErrorKind::Runtime,
                format!(
                    "PJRT plugin not found at '{plugin_path}'. Set TPURS_PJRT_PLUGIN to the path of a PJRT plugin \
                     (.so exporting GetPjrtApi), or install one: `pip install libtpu` (TPU), \
                     `pip install jax-cuda13-pjrt` (NVIDIA GPU) or `pip install fastatomstruct-xla-cpu` (CPU)"
                ),
            );
        }
        // Only the client says which platform it is. The GPU options go first: made without
        // them, the GPU plugin reserves 75% of the card, and a client made after that one
        // crashed in cuDNN autotuning (H200). Plugins that do not know the options refuse
        // them; then the client is made bare, and again if its platform wants options.
        let path = Path::new(plugin_path);
        let gpu_options = create_options("cuda", 0, None);
        let (mut client, used) = match Client::load(path, &gpu_options) {
            Ok(client) => (client, gpu_options),
            Err(_) => (Client::load(path, &[])?, Vec::new()),
        };
        let options = create_options(client.platform_name(), client.device_count(), cpu_devices);
        if options != used {
            drop(client);
            client = Client::load(path, &options)?;
        }
        let n = client.device_count();
        Ok(Runtime {
            plugin_path: plugin_path.to_string(),
            mode: AtomicU8::new(EagerMode::DeferNever as u8),
            fuse_limit: std::env::var("TPURS_FUSE_LIMIT")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(128),
            metrics: Metrics::default(),
            memory: (0..n).map(|_| Arc::default()).collect(),
            cache: MemoryCache::default(),
            next_batch: AtomicU64::new(n as u64 + 1),
            rng: (0..n).map(|_| Mutex::new(RngState::default())).collect(),
            last_output: (0..n).map(|_| Mutex::new(None)).collect(),
            uploads: Mutex::new(Vec::new()),
            scalars: Mutex::new(FxHashMap::default()),
            batches: (1..=n as u64)
                .map(|id| Mutex::new(Batch::new(id)))
                .collect(),
            programs: ProgramStore::from_env(&client, plugin_path),
            collectives: Mutex::default(),
            profile: Recorder::default(),
            checks: Mutex::default(),
            client,
        })
    }

    /// How ops are launched now.
    pub fn eager_mode(&self) -> EagerMode {
        match self.mode.load(Ordering::Relaxed) {
            1 => EagerMode::DeferAndFuse,
            2 => EagerMode::LaunchBlocking,
            _ => EagerMode::DeferNever,
        }
    }

    /// Sets the eager mode; pending work is launched first.
    pub fn set_eager_mode(&self, mode: EagerMode) -> Result<()> {
        self.flush_all()?;
        self.mode.store(mode as u8, Ordering::Relaxed);
        Ok(())
    }

    /// Ops a fused batch holds before it is launched (`TPURS_FUSE_LIMIT`, default 128).
    pub(crate) fn fuse_limit(&self) -> usize {
        self.fuse_limit
    }

    /// A new id for a deferred batch (pending storages name their batch by it).
    pub(crate) fn next_batch_id(&self) -> u64 {
        self.next_batch.fetch_add(1, Ordering::Relaxed)
    }

    /// A new storage of `nbytes` on `device` (an ordinal [`Runtime::check_device`] accepted).
    pub fn new_storage(&self, device: usize, nbytes: usize) -> Storage {
        Storage::new(self.memory[device].clone(), device, nbytes)
    }

    /// Memory statistics of `device`.
    pub fn memory(&self, device: usize) -> &DeviceMemory {
        &self.memory[device]
    }

    /// Free and total bytes of `device`: the plugin's limit when it reports one, else (the
    /// CPU plugin, whose device memory is the host's) the host's available and total memory.
    pub fn memory_info(&self, device: usize) -> Result<(u64, u64)> {
        if let Some(s) = self.client.device_memory_stats(device) {
            if let Some(limit) = s.bytes_limit.filter(|&l| l > 0) {
                return Ok(((limit - s.bytes_in_use).max(0) as u64, limit as u64));
            }
        }
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let field = |name: &str| -> Option<u64> {
            let line = meminfo.lines().find(|l| l.starts_with(name))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        };
        match (field("MemAvailable:"), field("MemTotal:")) {
            (Some(free), Some(total)) => Ok((free, total)),
            _ => invalid(
                ErrorKind::Runtime,
                format!("the memory of tpu:{device} is unknown (the plugin reports no limit)"),
            ),
        }
    }

    /// Every counter.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics.snapshot()
    }

    /// Zeroes the counters (not memory statistics).
    pub fn reset_metrics(&self) {
        self.metrics.reset();
    }

    /// Counts one CPU fallback of `op`; returns the new count for that op.
    pub fn record_fallback(&self, op: &str) -> u64 {
        self.metrics.record_fallback(op)
    }

    /// Starts recording spans: device activities (launches, copies; each launch is awaited
    /// so that its span covers the execution) and/or host activities (compiles).
    pub fn profile_start(&self, device: bool, host: bool) {
        self.profile.start(device, host);
    }

    /// Stops recording spans.
    pub fn profile_stop(&self) {
        self.profile.stop();
    }

    /// The spans recorded since [`Runtime::profile_start`], removed.
    pub fn profile_take(&self) -> Vec<Span> {
        self.profile.take()
    }

    /// Number of op plans and fused programs in the in-memory compile cache.
    pub fn cache_len(&self) -> usize {
        self.cache.len()
    }

    /// Registers a graph of the `torch.compile` backend to run as the table op
    /// `tpurs::graph` and counts it as a graph compile; returns its id and program text.
    pub fn register_graph(&self, graph: tpurs_ops::graph::Graph) -> Result<(i64, String)> {
        let registered = tpurs_ops::graph::register_graph(graph)?;
        self.metrics.graph_compiles.fetch_add(1, Ordering::Relaxed);
        Ok(registered)
    }

    /// Number of devices.
    pub fn device_count(&self) -> usize {
        self.client.device_count()
    }

    /// Checks a device ordinal.
    pub fn check_device(&self, device: i64) -> Result<usize> {
        let n = self.device_count() as i64;
        if device < 0 || device >= n {
            return invalid(
                ErrorKind::Runtime,
                format!("Invalid device tpu:{device}: {n} tpu device(s) available"),
            );
        }
        Ok(device as usize)
    }

    /// The generator state of `device`.
    pub fn rng_state(&self, device: usize) -> RngState {
        *self.rng[device].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the generator state of `device`.
    pub fn set_rng_state(&self, device: usize, state: RngState) {
        *self.rng[device].lock().unwrap_or_else(|e| e.into_inner()) = state;
    }

    /// The key and counter a random op on `device` uses next (and advances the counter).
    pub(crate) fn next_rng(&self, device: usize) -> [u64; 2] {
        let mut s = self.rng[device].lock().unwrap_or_else(|e| e.into_inner());
        let key = splitmix64(s.seed ^ splitmix64(s.offset.wrapping_add(0x9E37_79B9_7F4A_7C15)));
        s.offset += 1;
        [key, 0]
    }

    /// The deferred batch of `device` (locked).
    pub(crate) fn batch(&self, device: usize) -> MutexGuard<'_, Batch> {
        self.batches[device]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Launches the work deferred on every device, without waiting for it.
    pub fn flush_all(&self) -> Result<()> {
        for d in 0..self.device_count() {
            self.batch(d).flush(self, d)?;
        }
        Ok(())
    }

    /// How many device-side checks wait to be read.
    pub(crate) fn pending_checks(&self) -> usize {
        self.checks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Reads the device-side checks launched since the host last waited and raises the
    /// first that failed (all are consumed either way: the process goes on working).
    pub fn raise_checks(&self) -> Result<()> {
        let pending = std::mem::take(&mut *self.checks.lock().unwrap_or_else(|e| e.into_inner()));
        for (storage, check) in pending {
            if let Some(flat) = crate::defer::ready(self, &storage)? {
                let (failed, value) = read_check(&flat.buffer)?;
                if failed {
                    return Err(check.error(value).into());
                }
            }
        }
        Ok(())
    }

    /// Launches pending work and waits for the most recent launch on `device` to finish.
    pub fn synchronize(&self, device: usize) -> Result<()> {
        self.batch(device).flush(self, device)?;
        let uploads = std::mem::take(&mut *self.uploads.lock().unwrap_or_else(|e| e.into_inner()));
        for upload in uploads {
            upload.wait()?;
        }
        self.raise_checks()?;
        let last = self.last_output[device]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(b) = last {
            b.block_until_ready()?;
        }
        Ok(())
    }
}

/// `(failed, offending value)` of a check's `i64[2]` buffer.
pub(crate) fn read_check(buffer: &Buffer) -> Result<(bool, i64)> {
    let mut bytes = [0u8; 16];
    buffer.to_host(&mut bytes)?;
    let word = |i: usize| i64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    Ok((word(0) != 0, word(1)))
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
