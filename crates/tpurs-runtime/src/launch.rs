//! The eager hot path: describe the call as a cache key, find (or compile) its program,
//! gather parameter buffers, execute without waiting, and hand back result storages.

use std::cell::RefCell;
use std::sync::Arc;

use tpurs_hlo::{DType, Literal};
use tpurs_ops::dtype::from_scalar_type;
use tpurs_ops::{
    Arg, EagerArg, OpCall, OpId, ParamSource, ReturnSpec, ScalarMeta, StorageMeta, TensorMeta,
};
use tpurs_pjrt::Buffer;

use crate::cache::{get_or_lower, Plan};
use crate::defer::{Batch, Binding};
use crate::error::{invalid, ErrorKind, Result};
use crate::ffi::{self, kind, TpursArg, TpursOpResults, TpursReplace, TpursResult, TpursWrite};
use crate::metrics::{bump, metrics};
use crate::runtime::{eager_mode, runtime, EagerMode, Runtime};
use crate::storage::{Contents, Flat, Storage};
use crate::transfer::{element_type, zeros};

/// Per-thread buffers reused across calls so the hot path does not allocate for keys.
#[derive(Default)]
struct Scratch {
    key: Vec<u64>,
    slots: Vec<*const Storage>,
    slot_meta: Vec<StorageMeta>,
    results: Vec<TpursResult>,
    replaces: Vec<TpursReplace>,
    sizes: Vec<Vec<i64>>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The C entry point (see `TpursCoreApi::run_op`).
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn run_op(
    op: u32,
    args: *const TpursArg,
    nargs: i64,
    writes: *const TpursWrite,
    nwrites: i64,
    returns: *const i32,
    nreturns: i64,
    default_dtype: i32,
    out: *mut TpursOpResults,
) -> i32 {
    ffi::guarded(|| {
        // SAFETY: the bridge passes arrays of the stated lengths, valid for this call.
        let (args, writes, returns) = unsafe {
            (
                slice(args, nargs),
                slice(writes, nwrites),
                slice(returns, nreturns),
            )
        };
        let call = CallDesc {
            op,
            args,
            writes,
            returns,
            default_dtype,
        };
        let produced = run(&call)?;
        if !out.is_null() {
            // SAFETY: `out` points at a results struct owned by the caller.
            unsafe { *out = produced };
        }
        Ok(())
    })
}

pub(crate) unsafe fn slice<'a, T>(p: *const T, n: i64) -> &'a [T] {
    if p.is_null() || n <= 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n as usize)
    }
}

/// One op call as the bridge described it.
pub(crate) struct CallDesc<'a> {
    pub op: OpId,
    pub args: &'a [TpursArg],
    pub writes: &'a [TpursWrite],
    pub returns: &'a [i32],
    pub default_dtype: i32,
}

/// The element type of a ScalarType code; other dtypes (complex, float8, quantized) raise
/// `NotImplementedError`, as torch does for a dtype a kernel does not handle.
pub(crate) fn dtype_of(code: i32) -> Result<DType> {
    from_scalar_type(code).ok_or_else(|| {
        let name = match code {
            8 => "ComplexHalf",
            9 => "ComplexFloat",
            10 => "ComplexDouble",
            12..=14 | 16 => "a quantized dtype",
            23..=26 => "a float8 dtype",
            _ => "this dtype",
        };
        crate::Error::Invalid(
            ErrorKind::NotImplemented,
            format!("tpurs: {name} (ScalarType {code}) is not supported on the tpu device"),
        )
    })
}

impl Scratch {
    fn clear(&mut self) {
        self.key.clear();
        self.slots.clear();
        self.slot_meta.clear();
        self.results.clear();
        self.replaces.clear();
    }

    fn slot_of(&mut self, a: &TpursArg) -> Result<usize> {
        let p = a.storage as *const Storage;
        if let Some(i) = self.slots.iter().position(|&s| s == p) {
            return Ok(i);
        }
        if p.is_null() {
            return invalid(ErrorKind::Runtime, "tpu tensor without storage");
        }
        // SAFETY: the bridge passes storages created by this crate that outlive the call.
        let storage = unsafe { &*p };
        let meta = match storage.contents() {
            Contents::Ready(f) => StorageMeta {
                numel: f.numel,
                dtype: f.dtype,
            },
            Contents::Pending { dtype, numel, .. } => StorageMeta { numel, dtype },
            Contents::Empty => {
                let dtype = dtype_of(a.dtype)?;
                StorageMeta {
                    numel: (storage.nbytes / dtype.byte_size()) as i64,
                    dtype,
                }
            }
        };
        self.slots.push(p);
        self.slot_meta.push(meta);
        Ok(self.slots.len() - 1)
    }

    /// Appends the cache-key words of one argument.
    fn encode(&mut self, a: &TpursArg, bake: bool, device: &mut Option<i32>) -> Result<()> {
        self.key.push(a.kind as u64);
        match a.kind {
            kind::NONE => {}
            kind::TENSOR => {
                match *device {
                    None => *device = Some(a.device),
                    Some(d) if d != a.device => {
                        return invalid(
                            ErrorKind::Runtime,
                            format!(
                                "Expected all tensors to be on the same device, but found at least two devices, tpu:{d} and tpu:{}!",
                                a.device
                            ),
                        )
                    }
                    _ => {}
                }
                let slot = self.slot_of(a)?;
                // SAFETY: sizes and strides hold `ndim` entries.
                let (sizes, strides) =
                    unsafe { (slice(a.sizes, a.ndim), slice(a.strides, a.ndim)) };
                self.key.extend_from_slice(&[
                    a.dtype as u64,
                    slot as u64,
                    a.ndim as u64,
                    a.offset as u64,
                ]);
                self.key.extend(sizes.iter().map(|&v| v as u64));
                self.key.extend(strides.iter().map(|&v| v as u64));
            }
            kind::SCALAR => {
                self.key
                    .extend_from_slice(&[a.dtype as u64, a.wrapped as u64]);
                if bake {
                    self.key.extend_from_slice(&[a.i as u64, a.f.to_bits()]);
                }
            }
            kind::INT | kind::BOOL | kind::DTYPE => {
                self.key.extend_from_slice(&[a.i as u64, a.dtype as u64])
            }
            kind::FLOAT => self.key.push(a.f.to_bits()),
            kind::STR | kind::BOOL_LIST => {
                // SAFETY: `items` holds `ndim` bytes.
                let bytes: &[u8] = unsafe { slice(a.items as *const u8, a.ndim) };
                self.key.push(bytes.len() as u64);
                self.key.extend(bytes.iter().map(|&b| b as u64));
            }
            kind::INT_LIST => {
                // SAFETY: `sizes` holds `ndim` ints.
                let items = unsafe { slice(a.sizes, a.ndim) };
                self.key.push(items.len() as u64);
                self.key.extend(items.iter().map(|&v| v as u64));
            }
            kind::FLOAT_LIST => {
                // SAFETY: `items` holds `ndim` doubles.
                let items = unsafe { slice(a.items as *const f64, a.ndim) };
                self.key.push(items.len() as u64);
                self.key.extend(items.iter().map(|v| v.to_bits()));
            }
            kind::LIST => {
                // SAFETY: `items` holds `ndim` args.
                let items = unsafe { slice(a.items as *const TpursArg, a.ndim) };
                self.key.push(items.len() as u64);
                for item in items {
                    self.encode(item, bake, device)?;
                }
            }
            other => return invalid(ErrorKind::Runtime, format!("unknown argument kind {other}")),
        }
        Ok(())
    }
}

/// Converts C arguments into the lowering's description (cache misses only).
fn to_arg(a: &TpursArg, scratch: &mut Scratch) -> Result<EagerArg> {
    // SAFETY (all reads below): pointers hold `ndim` items as documented in `TpursArg`.
    Ok(match a.kind {
        kind::NONE => Arg::None,
        kind::TENSOR => {
            let (sizes, strides) = unsafe { (slice(a.sizes, a.ndim), slice(a.strides, a.ndim)) };
            Arg::Tensor(TensorMeta {
                dtype: dtype_of(a.dtype)?,
                sizes: sizes.to_vec(),
                strides: strides.to_vec(),
                offset: a.offset,
                slot: scratch.slot_of(a)?,
            })
        }
        kind::SCALAR => {
            let dtype = dtype_of(a.dtype)?;
            Arg::Scalar(ScalarMeta {
                dtype,
                wrapped: a.wrapped != 0,
                value: scalar_literal(a, dtype),
            })
        }
        kind::INT => Arg::Int(a.i),
        kind::BOOL => Arg::Bool(a.i != 0),
        kind::FLOAT => Arg::Float(a.f),
        kind::DTYPE => Arg::Dtype(dtype_of(a.dtype)?),
        kind::STR => {
            let bytes: &[u8] = unsafe { slice(a.items as *const u8, a.ndim) };
            Arg::Str(String::from_utf8_lossy(bytes).into_owned())
        }
        kind::INT_LIST => Arg::IntList(unsafe { slice(a.sizes, a.ndim) }.to_vec()),
        kind::FLOAT_LIST => {
            Arg::FloatList(unsafe { slice(a.items as *const f64, a.ndim) }.to_vec())
        }
        kind::BOOL_LIST => Arg::BoolList(
            unsafe { slice(a.items as *const u8, a.ndim) }
                .iter()
                .map(|&b| b != 0)
                .collect(),
        ),
        kind::LIST => {
            let items = unsafe { slice(a.items as *const TpursArg, a.ndim) };
            Arg::List(
                items
                    .iter()
                    .map(|i| to_arg(i, scratch))
                    .collect::<Result<_>>()?,
            )
        }
        other => return invalid(ErrorKind::Runtime, format!("unknown argument kind {other}")),
    })
}

fn scalar_literal(a: &TpursArg, dtype: DType) -> Literal {
    if dtype.is_float() {
        Literal::Float(a.f)
    } else if dtype == DType::Bool {
        Literal::Bool(a.i != 0)
    } else {
        Literal::Int(a.i)
    }
}

fn build_call(call: &CallDesc, scratch: &mut Scratch) -> Result<OpCall> {
    let args = call
        .args
        .iter()
        .map(|a| to_arg(a, scratch))
        .collect::<Result<Vec<_>>>()?;
    let writes = call
        .writes
        .iter()
        .map(|w| tpurs_ops::WriteTarget {
            arg: w.arg as usize,
            item: (w.item >= 0).then_some(w.item as usize),
            is_out: w.is_out != 0,
        })
        .collect();
    let returns = call
        .returns
        .iter()
        .map(|&r| match r {
            ffi::RETURN_FRESH => ReturnSpec::Fresh,
            ffi::RETURN_FRESH_LIST => ReturnSpec::FreshList,
            k => ReturnSpec::Alias(k as usize),
        })
        .collect();
    Ok(OpCall {
        op: call.op,
        args,
        storages: scratch.slot_meta.clone(),
        writes,
        returns,
        default_float: dtype_of(call.default_dtype)?,
    })
}

/// The argument a parameter source names.
fn source_arg(args: &[TpursArg], arg: usize, item: Option<usize>) -> &TpursArg {
    match item {
        None => &args[arg],
        // SAFETY: list items were validated when the key was built.
        Some(j) => unsafe { &slice(args[arg].items as *const TpursArg, args[arg].ndim)[j] },
    }
}

/// The buffer of a 0-d host number, cached by value.
fn scalar_buffer(rt: &Runtime, a: &TpursArg, device: usize) -> Result<Arc<Buffer>> {
    let dtype = dtype_of(a.dtype)?;
    let bits = if dtype.is_float() {
        a.f.to_bits()
    } else {
        a.i as u64
    };
    let key = (a.dtype, bits, device);
    let mut cache = rt.scalars.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = cache.get(&key) {
        return Ok(b.clone());
    }
    let bytes = scalar_bytes(dtype, scalar_literal(a, dtype));
    let buf = Arc::new(
        rt.client
            .buffer_from_host(&bytes, element_type(dtype), &[], device)?,
    );
    if cache.len() > 4096 {
        cache.clear();
    }
    cache.insert(key, buf.clone());
    Ok(buf)
}

/// Little-endian bytes of one element of `dtype` holding `v`.
pub(crate) fn scalar_bytes(dtype: DType, v: Literal) -> Vec<u8> {
    let f = v.as_f64();
    let i = match v {
        Literal::Int(i) => i,
        Literal::Bool(b) => b as i64,
        Literal::Float(x) => x as i64,
    };
    match dtype {
        DType::F32 => (f as f32).to_le_bytes().to_vec(),
        DType::F64 => f.to_le_bytes().to_vec(),
        DType::F16 => half::f16::from_f64(f).to_le_bytes().to_vec(),
        DType::BF16 => half::bf16::from_f64(f).to_le_bytes().to_vec(),
        DType::Bool => vec![(f != 0.0) as u8],
        _ => i.to_le_bytes()[..dtype.byte_size()].to_vec(),
    }
}

/// Where the outputs of one launch or recording come from.
enum Produced {
    /// Computed buffers, one per output.
    Buffers(Vec<Buffer>),
    /// Pending nodes of a batch, starting at this node index.
    Pending(u32),
}

/// Runs one call (launching it, or recording it in fused eager mode) and returns what it
/// produced.
pub(crate) fn run(call: &CallDesc) -> Result<TpursOpResults> {
    let rt = runtime()?;
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let s = &mut *guard;
        s.clear();
        let entry = tpurs_ops::op_entry(call.op);
        let mut device = None;
        s.key
            .extend_from_slice(&[call.op as u64, call.default_dtype as u64]);
        for a in call.args {
            s.encode(a, entry.bake_scalars, &mut device)?;
        }
        for m in &s.slot_meta {
            s.key.push(m.numel as u64);
            s.key.push(m.dtype as u64);
        }
        let dev = rt.check_device(device.unwrap_or(0) as i64)?;
        let key = std::mem::take(&mut s.key);
        let plan = get_or_lower(&key, || {
            let op_call = build_call(call, s)?;
            let lowered = tpurs_ops::lower(&op_call)?;
            Ok((op_call, lowered))
        });
        s.key = key;
        let plan = plan?;
        let mode = eager_mode();
        let mut batch = rt.batch(dev);
        if mode == EagerMode::DeferAndFuse {
            let bindings = bind_params(rt, s, call, &plan, dev, &mut batch)?;
            let first = batch.record(&plan, bindings);
            let out = finish(s, &plan, dev, Produced::Pending(first), Some(&mut batch));
            if batch.len() >= fuse_limit() {
                batch.flush(rt, dev)?;
            }
            return out;
        }
        // Launching on its own: anything deferred earlier goes first.
        batch.flush(rt, dev)?;
        drop(batch);
        let params = gather_params(rt, s, call, &plan, dev)?;
        let refs: Vec<&Buffer> = params.iter().map(|b| b.as_ref()).collect();
        let outs = plan.executable(rt)?.execute(&refs, dev)?;
        drop(refs);
        drop(params);
        bump(&metrics().op_launches, 1);
        if mode == EagerMode::LaunchBlocking {
            for b in &outs {
                b.block_until_ready()?;
            }
        }
        finish(s, &plan, dev, Produced::Buffers(outs), None)
    })
}

fn fuse_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("TPURS_FUSE_LIMIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(128)
    })
}

/// The current buffer of storage slot `slot`, zero-filled if it was never written.
fn storage_buffer(rt: &Runtime, s: &Scratch, slot: usize, dev: usize) -> Result<Arc<Buffer>> {
    // SAFETY: slot pointers were taken from this call's live arguments.
    let storage = unsafe { &*s.slots[slot] };
    if let Some(f) = crate::defer::ready(rt, storage)? {
        return Ok(f.buffer);
    }
    let m = &s.slot_meta[slot];
    let flat = zeros(rt, dev, m.dtype, m.numel)?;
    storage.set(flat.clone());
    Ok(flat.buffer)
}

/// A fresh generator-state buffer for one random op.
fn rng_buffer(rt: &Runtime, dev: usize) -> Result<Arc<Buffer>> {
    let state = rt.next_rng(dev);
    let bytes: Vec<u8> = state.iter().flat_map(|w| w.to_le_bytes()).collect();
    Ok(Arc::new(rt.client.buffer_from_host(
        &bytes,
        tpurs_pjrt::ElementType::U64,
        &[2],
        dev,
    )?))
}

/// Parameter buffers of a launch on its own.
fn gather_params(
    rt: &Runtime,
    s: &Scratch,
    call: &CallDesc,
    plan: &Plan,
    dev: usize,
) -> Result<Vec<Arc<Buffer>>> {
    plan.lowered
        .params
        .iter()
        .map(|p| match *p {
            ParamSource::Storage(slot) => storage_buffer(rt, s, slot, dev),
            ParamSource::Scalar(arg, item) => {
                scalar_buffer(rt, source_arg(call.args, arg, item), dev)
            }
            ParamSource::Rng => rng_buffer(rt, dev),
        })
        .collect()
}

/// Parameter bindings of a recorded op: pending storages of this batch feed from their node.
fn bind_params(
    rt: &Runtime,
    s: &Scratch,
    call: &CallDesc,
    plan: &Plan,
    dev: usize,
    batch: &mut Batch,
) -> Result<Vec<Binding>> {
    let mut bindings = Vec::with_capacity(plan.lowered.params.len());
    for p in &plan.lowered.params {
        let b = match *p {
            ParamSource::Storage(slot) => {
                // SAFETY: as in `storage_buffer`.
                let storage = unsafe { &*s.slots[slot] };
                match storage.contents() {
                    Contents::Pending {
                        batch: id, node, ..
                    } if id == batch.id() => Binding::Node(node),
                    Contents::Ready(f) => batch.external(f.buffer),
                    _ => {
                        let m = &s.slot_meta[slot];
                        let flat = zeros(rt, dev, m.dtype, m.numel)?;
                        storage.set(flat.clone());
                        batch.external(flat.buffer)
                    }
                }
            }
            ParamSource::Scalar(arg, item) => {
                batch.external(scalar_buffer(rt, source_arg(call.args, arg, item), dev)?)
            }
            ParamSource::Rng => batch.external(rng_buffer(rt, dev)?),
        };
        bindings.push(b);
    }
    Ok(bindings)
}

/// Gives each output its storage (new tensors, updated arguments, replaced out= storages)
/// and describes the schema's results for the bridge.
fn finish(
    s: &mut Scratch,
    plan: &Plan,
    dev: usize,
    produced: Produced,
    mut batch: Option<&mut Batch>,
) -> Result<TpursOpResults> {
    let lowered = &plan.lowered;
    let (mut buffers, first_node) = match produced {
        Produced::Buffers(b) => (Some(b.into_iter()), 0),
        Produced::Pending(first) => (None, first),
    };
    let mut fresh: Vec<*mut std::ffi::c_void> = Vec::new();
    let mut last: Option<Arc<Buffer>> = None;
    s.sizes.clear();
    for (i, spec) in lowered.outputs.iter().enumerate() {
        let node = first_node + i as u32;
        let contents = match (buffers.as_mut(), batch.as_ref()) {
            (Some(it), _) => {
                let buffer = Arc::new(it.next().expect("one buffer per output"));
                last = Some(buffer.clone());
                let (dtype, numel) = output_type(plan, spec);
                Contents::Ready(Flat {
                    buffer,
                    dtype,
                    numel,
                })
            }
            (None, Some(b)) => b.pending(node),
            (None, None) => unreachable!("pending outputs come with their batch"),
        };
        let storage: Arc<Storage> = match spec {
            tpurs_ops::OutputSpec::Fresh(ty) | tpurs_ops::OutputSpec::Replace(_, ty) => {
                s.sizes.push(ty.shape.clone());
                Arc::new(Storage::with_contents(
                    dev,
                    ty.numel() as usize * ty.dtype.byte_size(),
                    contents,
                ))
            }
            tpurs_ops::OutputSpec::Storage(slot) => {
                // SAFETY: slot pointers were taken from this call's live arguments.
                let st = unsafe { Storage::arc_from_raw(s.slots[*slot] as *const _) };
                st.set_contents(contents);
                st
            }
        };
        if let Some(b) = batch.as_mut() {
            b.bind(node, &storage);
        }
        match spec {
            tpurs_ops::OutputSpec::Fresh(_) => fresh.push(storage.into_raw()),
            tpurs_ops::OutputSpec::Replace(k, ty) => s.replaces.push(TpursReplace {
                target: *k as i32,
                dtype: tpurs_ops::dtype::to_scalar_type(ty.dtype),
                ndim: ty.rank() as i64,
                sizes: std::ptr::null(),
                storage: storage.into_raw(),
                nbytes: (ty.numel() as usize * ty.dtype.byte_size()) as i64,
            }),
            tpurs_ops::OutputSpec::Storage(_) => {}
        }
    }
    if let Some(b) = last {
        let rt = runtime()?;
        *rt.last_output[dev]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(b);
    }
    Ok(describe_results(s, plan, dev, &fresh))
}

/// Element type and count of one output's flat buffer.
fn output_type(plan: &Plan, spec: &tpurs_ops::OutputSpec) -> (DType, i64) {
    match spec {
        tpurs_ops::OutputSpec::Fresh(t) | tpurs_ops::OutputSpec::Replace(_, t) => {
            (t.dtype, t.numel())
        }
        tpurs_ops::OutputSpec::Storage(slot) => {
            let m = &plan.call.storages[*slot];
            (m.dtype, m.numel)
        }
    }
}

/// Fills the scratch result arrays the bridge reads.
fn describe_results(
    s: &mut Scratch,
    plan: &Plan,
    dev: usize,
    fresh: &[*mut std::ffi::c_void],
) -> TpursOpResults {
    let lowered = &plan.lowered;
    let fresh_tys: Vec<&tpurs_hlo::TensorType> = lowered
        .outputs
        .iter()
        .filter_map(|o| match o {
            tpurs_ops::OutputSpec::Fresh(t) => Some(t),
            _ => None,
        })
        .collect();
    // Sizes live in `s.sizes` in output order; fresh ones and replacements interleave.
    let mut fresh_sizes = Vec::new();
    let mut replace_sizes = Vec::new();
    let mut k = 0;
    for o in &lowered.outputs {
        match o {
            tpurs_ops::OutputSpec::Fresh(_) => {
                fresh_sizes.push(k);
                k += 1;
            }
            tpurs_ops::OutputSpec::Replace(..) => {
                replace_sizes.push(k);
                k += 1;
            }
            tpurs_ops::OutputSpec::Storage(_) => {}
        }
    }
    for (r, rep) in s.replaces.iter_mut().enumerate() {
        rep.sizes = s.sizes[replace_sizes[r]].as_ptr();
    }
    let fresh_result = |n: usize, sizes: &[Vec<i64>]| TpursResult {
        kind: ffi::result::FRESH,
        dtype: tpurs_ops::dtype::to_scalar_type(fresh_tys[n].dtype),
        alias: -1,
        device: dev as i32,
        ndim: fresh_tys[n].rank() as i64,
        sizes: sizes[fresh_sizes[n]].as_ptr(),
        storage: fresh[n],
        nbytes: (fresh_tys[n].numel() as usize * fresh_tys[n].dtype.byte_size()) as i64,
    };
    let empty = TpursResult {
        kind: ffi::result::UNDEFINED,
        dtype: 0,
        alias: -1,
        device: dev as i32,
        ndim: 0,
        sizes: std::ptr::null(),
        storage: std::ptr::null_mut(),
        nbytes: 0,
    };
    for sink in &lowered.results {
        match sink {
            tpurs_ops::ResultSink::Fresh(n) => s.results.push(fresh_result(*n, &s.sizes)),
            tpurs_ops::ResultSink::FreshList(idx) => {
                s.results.push(TpursResult {
                    kind: ffi::result::LIST,
                    ndim: idx.len() as i64,
                    ..empty
                });
                for &n in idx {
                    s.results.push(fresh_result(n, &s.sizes));
                }
            }
            tpurs_ops::ResultSink::Alias(k) => s.results.push(TpursResult {
                kind: ffi::result::ALIAS,
                alias: *k as i32,
                ..empty
            }),
            tpurs_ops::ResultSink::Undefined => s.results.push(empty),
        }
    }
    TpursOpResults {
        n: s.results.len() as i64,
        results: s.results.as_ptr(),
        nreplace: s.replaces.len() as i64,
        replaces: s.replaces.as_ptr(),
    }
}
