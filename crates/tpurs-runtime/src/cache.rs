//! The first-tier compile cache, in memory (tiers 2 and 3 on disk: `programs.rs`). Two
//! levels:
//! - op plans, keyed by the call's signature (op, argument kinds, dtypes, shapes, strides,
//!   offsets, storage sizes, attribute values; not scalar values, which are run-time
//!   parameters, nor the device: executables are compiled portable). A plan holds the
//!   lowering and, once launched on its own, the executable.
//! - fused programs (fused eager), keyed by the sequence of plans and how they feed each
//!   other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use rustc_hash::FxHashMap;
use tpurs_ops::{Lowered, OpCall};
use tpurs_pjrt::{CompileOptions, LoadedExecutable, OverrideValue};

use crate::metrics::bump;
use crate::profile::{now_ns, SpanKind};
use crate::runtime::Runtime;
use crate::Result;

/// A lowered op call: its program, how to feed and read it, and its executable once built.
pub struct Plan {
    /// Unique id (part of fused-program keys).
    pub id: u64,
    /// The call the plan was lowered from (re-lowered into fused programs).
    pub call: OpCall,
    /// Parameter sources, outputs, result sinks and the program text.
    pub lowered: Lowered,
    exe: OnceLock<LoadedExecutable>,
}

impl Plan {
    /// The executable of the op alone, compiled on first use.
    pub fn executable(&self, rt: &Runtime) -> Result<&LoadedExecutable> {
        if let Some(e) = self.exe.get() {
            return Ok(e);
        }
        let exe = compile(rt, &self.lowered.mlir)?;
        let _ = self.exe.set(exe);
        Ok(self.exe.get().expect("just set"))
    }
}

/// The executable of a module: loaded from the on-disk tiers, or compiled (counting
/// compiles and compile time) and stored there. When the plugin cannot map the new code
/// (the process is at the kernel's mapping limit, see [`MemoryCache`]) the in-memory tier
/// is emptied and the module tried once more.
pub fn compile(rt: &Runtime, mlir: &str) -> Result<LoadedExecutable> {
    match compile_once(rt, mlir) {
        Err(e) if e.to_string().contains("Failed to materialize symbols") => {
            rt.cache.clear();
            compile_once(rt, mlir)
        }
        result => result,
    }
}

fn compile_once(rt: &Runtime, mlir: &str) -> Result<LoadedExecutable> {
    // Every op rounds its half-precision result, as in eager PyTorch: by default XLA drops
    // the round trip through bfloat16 between two fused ops, so a fused batch differed from
    // the same ops run one by one (ndtr of a bfloat16 -2.47: 0.0059 fused, 0.0078 alone).
    let options = CompileOptions {
        env_overrides: vec![(
            "xla_allow_excess_precision".into(),
            OverrideValue::Bool(false),
        )],
        ..CompileOptions::default()
    };
    let wall = now_ns();
    let mut compiled = false;
    let exe = rt
        .programs
        .get_or_compile(&rt.client, &rt.metrics, mlir, &options, || {
            compiled = true;
            let start = Instant::now();
            let exe = rt.client.compile(mlir, &options);
            bump(&rt.metrics.compile_ns, start.elapsed().as_nanos() as u64);
            let exe = exe.inspect_err(|_| {
                if std::env::var_os("TPURS_DUMP_ON_ERROR").is_some() {
                    eprintln!("{mlir}");
                }
            })?;
            bump(&rt.metrics.compiles, 1);
            Ok(exe)
        });
    if rt.profile.on(SpanKind::Compile) {
        let name = if compiled {
            "compile"
        } else {
            "load compiled program"
        };
        let detail = format!("{} bytes of StableHLO", mlir.len());
        rt.profile
            .record(SpanKind::Compile, name.into(), detail, 0, 0, wall);
    }
    exe
}

/// A fused program (its outputs are the batch's live nodes, in node order).
pub struct Fused {
    /// The executable.
    pub exe: LoadedExecutable,
}

/// The in-memory tier of one runtime: op plans and fused programs by key, each kind at
/// most `TPURS_MAX_CACHED_PROGRAMS` (1024). Every executable keeps its JIT-compiled code
/// mapped (3 to 15 memory mappings per program on the CPU plugin), so an unbounded cache
/// makes a long process hit the kernel's mapping limit (`vm.max_map_count`, 65530) and
/// the plugin fail to compile ("Failed to materialize symbols"). Beyond the bound the least recently used quarter is
/// dropped; a dropped program comes back from the on-disk tiers when needed again.
pub(crate) struct MemoryCache {
    plans: Mutex<Lru<Plan>>,
    fused: Mutex<Lru<Fused>>,
    next_plan: AtomicU64,
}

impl Default for MemoryCache {
    fn default() -> Self {
        let capacity = std::env::var("TPURS_MAX_CACHED_PROGRAMS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or(1024);
        MemoryCache {
            plans: Mutex::new(Lru::new(capacity)),
            fused: Mutex::new(Lru::new(capacity)),
            next_plan: AtomicU64::new(0),
        }
    }
}

impl MemoryCache {
    /// Number of cached op plans and fused programs.
    pub fn len(&self) -> usize {
        self.plans.lock().map(|c| c.map.len()).unwrap_or(0)
            + self.fused.lock().map(|c| c.map.len()).unwrap_or(0)
    }

    /// Drops every cached plan and fused program (those in use live on until released).
    fn clear(&self) {
        lock(&self.plans).map.clear();
        lock(&self.fused).map.clear();
    }
}

/// Values by key, the least recently used dropped beyond a capacity.
struct Lru<T> {
    map: FxHashMap<Box<[u64]>, (Arc<T>, u64)>,
    capacity: usize,
    /// Counts lookups; an entry remembers the count at its last use.
    clock: u64,
}

impl<T> Lru<T> {
    fn new(capacity: usize) -> Self {
        Lru {
            map: FxHashMap::default(),
            capacity,
            clock: 0,
        }
    }

    fn get(&mut self, key: &[u64]) -> Option<Arc<T>> {
        self.clock += 1;
        let (value, used) = self.map.get_mut(key)?;
        *used = self.clock;
        Some(value.clone())
    }

    fn insert(&mut self, key: &[u64], value: Arc<T>) {
        if self.map.len() >= self.capacity {
            let mut uses: Vec<u64> = self.map.values().map(|(_, used)| *used).collect();
            let cut = (uses.len() / 4).max(1);
            if cut >= uses.len() {
                self.map.clear();
            } else {
                let (_, &mut oldest_kept, _) = uses.select_nth_unstable(cut);
                self.map.retain(|_, (_, used)| *used >= oldest_kept);
            }
        }
        self.clock += 1;
        self.map.insert(key.into(), (value, self.clock));
    }
}

/// Looks `key` up among `rt`'s plans; on a miss calls `lower` and stores the plan.
pub fn get_or_lower(
    rt: &Runtime,
    key: &[u64],
    lower: impl FnOnce() -> Result<(OpCall, Lowered)>,
) -> Result<Arc<Plan>> {
    let cache = &rt.cache;
    if let Some(p) = lock(&cache.plans).get(key) {
        bump(&rt.metrics.cache_hits, 1);
        return Ok(p);
    }
    bump(&rt.metrics.cache_misses, 1);
    let (call, lowered) = lower()?;
    let plan = Arc::new(Plan {
        id: cache.next_plan.fetch_add(1, Ordering::Relaxed),
        call,
        lowered,
        exe: OnceLock::new(),
    });
    lock(&cache.plans).insert(key, plan.clone());
    Ok(plan)
}

/// Looks up a fused program; on a miss `build` returns its module text, which is compiled.
pub fn get_or_compile_fused(
    rt: &Runtime,
    key: &[u64],
    build: impl FnOnce() -> Result<String>,
) -> Result<Arc<Fused>> {
    let cache = &rt.cache;
    if let Some(f) = lock(&cache.fused).get(key) {
        bump(&rt.metrics.cache_hits, 1);
        return Ok(f);
    }
    bump(&rt.metrics.cache_misses, 1);
    let mlir = build()?;
    let f = Arc::new(Fused {
        exe: compile(rt, &mlir)?,
    });
    lock(&cache.fused).insert(key, f.clone());
    Ok(f)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_drops_the_least_recently_used_quarter() {
        let mut lru = Lru::new(8);
        for k in 0..8u64 {
            lru.insert(&[k], Arc::new(k));
        }
        // Use 0 and 1 again: 2, 3 become the oldest.
        assert_eq!(lru.get(&[0]).as_deref(), Some(&0));
        assert_eq!(lru.get(&[1]).as_deref(), Some(&1));
        lru.insert(&[8], Arc::new(8));
        assert_eq!(lru.map.len(), 7);
        assert!(lru.get(&[2]).is_none() && lru.get(&[3]).is_none());
        for k in [0, 1, 4, 5, 6, 7, 8] {
            assert_eq!(lru.get(&[k]).as_deref(), Some(&k));
        }
    }

    #[test]
    fn lru_of_one_keeps_the_newest() {
        let mut lru = Lru::new(1);
        lru.insert(&[1], Arc::new(1));
        lru.insert(&[2], Arc::new(2));
        assert!(lru.get(&[1]).is_none());
        assert_eq!(lru.get(&[2]).as_deref(), Some(&2));
    }
}
