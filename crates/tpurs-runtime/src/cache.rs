//! The first-tier compile cache: in memory, keyed by the op call's signature.
//!
//! The key holds everything the program depends on (op, argument kinds, dtypes, shapes,
//! strides, offsets, storage sizes, attribute values) and nothing it does not (scalar values
//! passed at run time, device: executables are compiled portable).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use rustc_hash::FxHashMap;
use tpurs_ops::Lowered;
use tpurs_pjrt::{CompileOptions, LoadedExecutable};

use crate::metrics::{bump, metrics};
use crate::runtime::Runtime;
use crate::Result;

/// A compiled op: the executable and how to feed and read it.
pub struct Compiled {
    /// The executable.
    pub exe: LoadedExecutable,
    /// Parameter sources and result sinks.
    pub lowered: Lowered,
}

type Cache = Mutex<FxHashMap<Box<[u64]>, Arc<Compiled>>>;

fn cache() -> &'static Cache {
    static C: OnceLock<Cache> = OnceLock::new();
    C.get_or_init(|| Mutex::new(FxHashMap::default()))
}

/// Looks up `key`; on a miss calls `lower` and compiles its program.
pub fn get_or_compile(
    rt: &Runtime,
    key: &[u64],
    lower: impl FnOnce() -> Result<Lowered>,
) -> Result<Arc<Compiled>> {
    if let Some(c) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(key) {
        bump(&metrics().cache_hits, 1);
        return Ok(c.clone());
    }
    bump(&metrics().cache_misses, 1);
    let lowered = lower()?;
    let start = Instant::now();
    let exe = rt.client.compile(&lowered.mlir, &CompileOptions::default());
    bump(&metrics().compile_ns, start.elapsed().as_nanos() as u64);
    let exe = exe.map_err(|e| {
        if std::env::var_os("TPURS_DUMP_ON_ERROR").is_some() {
            eprintln!("{}", lowered.mlir);
        }
        e
    })?;
    bump(&metrics().compiles, 1);
    let compiled = Arc::new(Compiled { exe, lowered });
    cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key.into(), compiled.clone());
    Ok(compiled)
}

/// Number of cached programs.
pub fn cache_len() -> usize {
    cache().lock().map(|c| c.len()).unwrap_or(0)
}
