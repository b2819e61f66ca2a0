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
use tpurs_pjrt::{CompileOptions, LoadedExecutable};

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
/// compiles and compile time) and stored there.
pub fn compile(rt: &Runtime, mlir: &str) -> Result<LoadedExecutable> {
    let options = CompileOptions::default();
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
    if rt.profile.on() {
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

/// The in-memory tier of one runtime: op plans and fused programs by key.
#[derive(Default)]
pub(crate) struct MemoryCache {
    plans: Mutex<FxHashMap<Box<[u64]>, Arc<Plan>>>,
    fused: Mutex<FxHashMap<Box<[u64]>, Arc<Fused>>>,
    next_plan: AtomicU64,
}

impl MemoryCache {
    /// Number of cached op plans and fused programs.
    pub fn len(&self) -> usize {
        self.plans.lock().map(|c| c.len()).unwrap_or(0)
            + self.fused.lock().map(|c| c.len()).unwrap_or(0)
    }
}

/// Looks `key` up among `rt`'s plans; on a miss calls `lower` and stores the plan.
pub fn get_or_lower(
    rt: &Runtime,
    key: &[u64],
    lower: impl FnOnce() -> Result<(OpCall, Lowered)>,
) -> Result<Arc<Plan>> {
    let cache = &rt.cache;
    if let Some(p) = cache
        .plans
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(key)
    {
        bump(&rt.metrics.cache_hits, 1);
        return Ok(p.clone());
    }
    bump(&rt.metrics.cache_misses, 1);
    let (call, lowered) = lower()?;
    let plan = Arc::new(Plan {
        id: cache.next_plan.fetch_add(1, Ordering::Relaxed),
        call,
        lowered,
        exe: OnceLock::new(),
    });
    cache
        .plans
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key.into(), plan.clone());
    Ok(plan)
}

/// Looks up a fused program; on a miss `build` returns its module text, which is compiled.
pub fn get_or_compile_fused(
    rt: &Runtime,
    key: &[u64],
    build: impl FnOnce() -> Result<String>,
) -> Result<Arc<Fused>> {
    let cache = &rt.cache;
    if let Some(f) = cache
        .fused
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(key)
    {
        bump(&rt.metrics.cache_hits, 1);
        return Ok(f.clone());
    }
    bump(&rt.metrics.cache_misses, 1);
    let mlir = build()?;
    let f = Arc::new(Fused {
        exe: compile(rt, &mlir)?,
    });
    cache
        .fused
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key.into(), f.clone());
    Ok(f)
}
