//! `tpurs._core`: the Python face of the Rust runtime. Op execution never passes through
//! here (the C++ bridge calls the runtime's C ABI directly); this module starts the runtime
//! and serves `torch.tpu`'s queries.

use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::OnceLock;

use tpurs_hlo::TensorType;
use tpurs_ops::external::{register_external, External};
use tpurs_runtime::{Error, ErrorKind, Runtime};

mod graph;

/// Maps a runtime error to the Python exception CPU PyTorch would raise.
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Index => PyIndexError::new_err(msg),
        ErrorKind::Value => PyValueError::new_err(msg),
        ErrorKind::Type => PyTypeError::new_err(msg),
        ErrorKind::NotImplemented | ErrorKind::Uncovered => PyNotImplementedError::new_err(msg),
        ErrorKind::Runtime => PyRuntimeError::new_err(msg),
        ErrorKind::OutOfMemory => out_of_memory(msg),
    }
}

/// `torch.OutOfMemoryError(msg)` (a `RuntimeError` where torch is not importable).
fn out_of_memory(msg: String) -> PyErr {
    Python::attach(|py| {
        let class = py
            .import("torch")
            .and_then(|torch| torch.getattr("OutOfMemoryError"));
        match class {
            Ok(class) => match class.call1((msg.clone(),)) {
                Ok(err) => PyErr::from_value(err),
                Err(_) => PyRuntimeError::new_err(msg),
            },
            Err(_) => PyRuntimeError::new_err(msg),
        }
    })
}

/// The runtime torch's "tpu" device runs on, created by `init`.
static DEFAULT: OnceLock<Runtime> = OnceLock::new();

fn rt() -> PyResult<&'static Runtime> {
    DEFAULT.get().ok_or(Error::NotInitialised).map_err(to_py)
}

/// Loads the PJRT plugin and creates the default runtime (once; later calls keep it).
#[pyfunction]
#[pyo3(signature = (plugin_path, cpu_devices=None))]
fn init(plugin_path: &str, cpu_devices: Option<i64>) -> PyResult<()> {
    if DEFAULT.get().is_none() {
        let rt = Runtime::new(plugin_path, cpu_devices).map_err(to_py)?;
        let _ = DEFAULT.set(rt);
    }
    Ok(())
}

/// True once `init` succeeded.
#[pyfunction]
fn is_initialized() -> bool {
    DEFAULT.get().is_some()
}

/// The PJRT platform name ("cpu", "cuda", "tpu").
#[pyfunction]
fn platform() -> PyResult<String> {
    Ok(rt()?.client.platform_name().to_string())
}

/// The PJRT platform version string.
#[pyfunction]
fn platform_version() -> PyResult<String> {
    Ok(rt()?.client.platform_version().to_string())
}

/// Path of the loaded plugin.
#[pyfunction]
fn plugin_path() -> PyResult<String> {
    Ok(rt()?.plugin_path.clone())
}

/// Number of devices.
#[pyfunction]
fn device_count() -> PyResult<usize> {
    Ok(rt()?.device_count())
}

/// The PJRT device kind of `device`.
#[pyfunction]
fn device_kind(device: i64) -> PyResult<String> {
    let rt = rt()?;
    let d = rt.check_device(device).map_err(to_py)?;
    Ok(rt.client.device_kind(d))
}

/// Address of the C function table the torch bridge uses.
#[pyfunction]
fn c_api_address() -> usize {
    &tpurs_runtime::abi::CORE_API as *const _ as usize
}

/// Address of the default runtime, the context argument of the bridge's calls.
#[pyfunction]
fn runtime_address() -> PyResult<usize> {
    Ok(rt()? as *const Runtime as usize)
}

/// Names of every op with a lowering rule.
#[pyfunction]
fn op_names() -> Vec<&'static str> {
    tpurs_ops::op_names().collect()
}

/// Counters: launches, compiles, cache hits/misses, compile seconds, bytes moved, fallbacks.
#[pyfunction]
fn metrics(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let m = rt()?.metrics();
    let d = PyDict::new(py);
    d.set_item("op_launches", m.op_launches)?;
    d.set_item("compiles", m.compiles)?;
    d.set_item("graph_compiles", m.graph_compiles)?;
    d.set_item("compile_cache_hits", m.cache_hits)?;
    d.set_item("compile_cache_misses", m.cache_misses)?;
    d.set_item("compile_seconds", m.compile_seconds)?;
    d.set_item("tier2_hits", m.tier2_hits)?;
    d.set_item("tier2_misses", m.tier2_misses)?;
    d.set_item("tier3_hits", m.tier3_hits)?;
    d.set_item("tier3_misses", m.tier3_misses)?;
    d.set_item("cache_rejected", m.cache_rejected)?;
    d.set_item("bytes_to_device", m.bytes_to_device)?;
    d.set_item("bytes_to_host", m.bytes_to_host)?;
    d.set_item("bytes_device_to_device", m.bytes_device_to_device)?;
    d.set_item("collectives", m.collectives)?;
    d.set_item("donated_buffers", m.donated_buffers)?;
    let f = PyDict::new(py);
    for (k, v) in &m.fallbacks {
        f.set_item(k, v)?;
    }
    d.set_item("fallbacks", f)?;
    d.set_item("fallback_count", m.fallbacks.values().sum::<u64>())?;
    Ok(d)
}

/// Counts one fallback of `name` (an op or a compiled graph run op by op); returns the new
/// count for that name.
#[pyfunction]
fn record_fallback(name: &str) -> PyResult<u64> {
    Ok(rt()?.record_fallback(name))
}

/// Zeroes the counters.
#[pyfunction]
fn reset_metrics() -> PyResult<()> {
    rt()?.reset_metrics();
    Ok(())
}

/// Launches the work deferred on every device (fused eager), without waiting.
#[pyfunction]
fn flush() -> PyResult<()> {
    rt()?.flush_all().map_err(to_py)
}

/// Waits for the work launched on `device`.
#[pyfunction]
fn synchronize(py: Python<'_>, device: i64) -> PyResult<()> {
    let rt = rt()?;
    let d = rt.check_device(device).map_err(to_py)?;
    py.detach(|| rt.synchronize(d)).map_err(to_py)
}

/// Generator state of `device` as (seed, offset).
#[pyfunction]
fn rng_state(device: i64) -> PyResult<(u64, u64)> {
    let rt = rt()?;
    let s = rt.rng_state(rt.check_device(device).map_err(to_py)?);
    Ok((s.seed, s.offset))
}

/// Sets the generator state of `device`.
#[pyfunction]
fn set_rng_state(device: i64, seed: u64, offset: u64) -> PyResult<()> {
    let rt = rt()?;
    let d = rt.check_device(device).map_err(to_py)?;
    rt.set_rng_state(d, tpurs_runtime::RngState { seed, offset });
    Ok(())
}

/// Sets the eager mode: 0 = DEFER_NEVER, 1 = DEFER_AND_FUSE, 2 = DEFER_NEVER_AND_LAUNCH_BLOCKING.
#[pyfunction]
fn set_eager_mode(mode: u8) -> PyResult<()> {
    let m = match mode {
        0 => tpurs_runtime::EagerMode::DeferNever,
        1 => tpurs_runtime::EagerMode::DeferAndFuse,
        2 => tpurs_runtime::EagerMode::LaunchBlocking,
        _ => return Err(PyValueError::new_err(format!("unknown eager mode {mode}"))),
    };
    rt()?.set_eager_mode(m).map_err(to_py)
}

/// The eager mode as set by `set_eager_mode`.
#[pyfunction]
fn eager_mode() -> PyResult<u8> {
    Ok(rt()?.eager_mode() as u8)
}

/// Registers a graph of ATen nodes (see `graph.rs` for the encoding) to run as one program
/// through `torch.ops.tpurs.graph`; returns its id and StableHLO text.
#[pyfunction]
fn register_graph(
    inputs: Vec<(i32, Vec<i64>)>,
    nodes: Vec<graph::NodeDesc<'_>>,
    outputs: Vec<usize>,
    strided: Vec<usize>,
    default_dtype: i32,
    precision: &str,
) -> PyResult<(i64, String)> {
    let graph = graph::decode_graph(inputs, nodes, outputs, strided, default_dtype, precision)?;
    rt()?.register_graph(graph).map_err(to_py)
}

/// Registers a StableHLO function for `torch.ops.tpurs.stablehlo`: `callee` names it in
/// `text` (private `func.func` definitions), `params` and `results` are its signature as
/// (dtype code, sizes); returns its id.
#[pyfunction]
fn register_stablehlo(
    callee: String,
    text: String,
    params: Vec<(i32, Vec<i64>)>,
    results: Vec<(i32, Vec<i64>)>,
) -> PyResult<i64> {
    let types = |list: Vec<(i32, Vec<i64>)>| -> PyResult<Vec<TensorType>> {
        list.into_iter()
            .map(|(code, sizes)| Ok(TensorType::new(graph::dtype(code)?, sizes)))
            .collect()
    };
    let external = External {
        callee,
        text,
        params: types(params)?,
        results: types(results)?,
    };
    Ok(register_external(external))
}

/// Runs one collective over the devices of this process. `inputs[r]` and `outputs[r]` are
/// rank r's storages (`untyped_storage().data_ptr()` of a tpu tensor: the runtime's storage
/// pointer), each holding `numel` elements of `dtype` from offset 0; the caller keeps the
/// tensors alive for the call.
#[pyfunction]
fn collective(
    py: Python<'_>,
    kind: &str,
    reduce: &str,
    dtype: i32,
    numel: i64,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
) -> PyResult<()> {
    use tpurs_runtime::collectives::{run, Collective, ReduceOp};
    let reduce = match reduce {
        "sum" => ReduceOp::Sum,
        "product" => ReduceOp::Product,
        "max" => ReduceOp::Max,
        "min" => ReduceOp::Min,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown reduction '{other}'"
            )))
        }
    };
    let op = match kind {
        "all_reduce" => Collective::AllReduce(reduce),
        "all_gather" => Collective::AllGather,
        "reduce_scatter" => Collective::ReduceScatter(reduce),
        "all_to_all" => Collective::AllToAll,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown collective '{other}'"
            )))
        }
    };
    let dtype = tpurs_ops::dtype::from_scalar_type(dtype)
        .ok_or_else(|| PyTypeError::new_err(format!("unsupported dtype code {dtype}")))?;
    let storages = |ptrs: Vec<usize>| -> PyResult<Vec<_>> {
        ptrs.into_iter()
            .map(|p| {
                if p == 0 {
                    return Err(PyValueError::new_err("a collective tensor has no storage"));
                }
                // SAFETY: `p` is the data pointer of a live tpu storage, which torch keeps
                // alive (it holds its own reference) for the duration of this call.
                Ok(unsafe { tpurs_runtime::abi::storage_from_torch(p as *const std::ffi::c_void) })
            })
            .collect()
    };
    let (inputs, outputs) = (storages(inputs)?, storages(outputs)?);
    let rt = rt()?;
    py.detach(|| run(rt, op, dtype, numel, &inputs, &outputs))
        .map_err(to_py)
}

/// Number of programs in the in-memory compile cache.
#[pyfunction]
fn compile_cache_size() -> PyResult<usize> {
    Ok(rt()?.cache_len())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(init, m)?)?;
    m.add_function(wrap_pyfunction!(is_initialized, m)?)?;
    m.add_function(wrap_pyfunction!(platform, m)?)?;
    m.add_function(wrap_pyfunction!(platform_version, m)?)?;
    m.add_function(wrap_pyfunction!(plugin_path, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(device_kind, m)?)?;
    m.add_function(wrap_pyfunction!(c_api_address, m)?)?;
    m.add_function(wrap_pyfunction!(runtime_address, m)?)?;
    m.add_function(wrap_pyfunction!(op_names, m)?)?;
    m.add_function(wrap_pyfunction!(metrics, m)?)?;
    m.add_function(wrap_pyfunction!(reset_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(record_fallback, m)?)?;
    m.add_function(wrap_pyfunction!(synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(flush, m)?)?;
    m.add_function(wrap_pyfunction!(rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(compile_cache_size, m)?)?;
    m.add_function(wrap_pyfunction!(register_graph, m)?)?;
    m.add_function(wrap_pyfunction!(register_stablehlo, m)?)?;
    m.add_function(wrap_pyfunction!(collective, m)?)?;
    m.add_function(wrap_pyfunction!(set_eager_mode, m)?)?;
    m.add_function(wrap_pyfunction!(eager_mode, m)?)?;
    Ok(())
}
