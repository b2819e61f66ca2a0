//! The eager hot path: describe the call as a cache key, find (or compile) its program,
//! gather parameter buffers, execute without waiting, and hand back result storages.

use std::cell::RefCell;
use std::sync::Arc;

use tpurs_hlo::{DType, Literal, Precision};
use tpurs_ops::dtype::from_scalar_type;
use tpurs_ops::{
    Arg, EagerArg, OpCall, OpEntry, OpId, ParamSource, ReturnSpec, ScalarMeta, StorageMeta,
    TensorMeta,
};
use tpurs_pjrt::Buffer;

use crate::abi::{
    self, kind, storage_into_raw, CArg, TensorRef, TpursOpResults, TpursReplace, TpursResult,
    TpursWrite,
};
use crate::cache::{get_or_lower, Plan};
use crate::defer::{Batch, Binding};
use crate::error::{invalid, ErrorKind, Result};
use crate::host_numbers::{scalar_buffer, scalar_literal, source_offset, source_scalar};
use crate::metrics::bump;
use crate::profile::{now_ns, SpanKind};
use crate::runtime::{EagerMode, Runtime};
use crate::storage::{Contents, Flat, Storage};
use crate::transfer::zeros;

/// Per-thread buffers reused across calls so the hot path does not allocate for keys.
/// `slots` holds the call's storages during the call only.
#[derive(Default)]
struct Scratch {
    key: Vec<u64>,
    slots: Vec<Arc<Storage>>,
    slot_meta: Vec<StorageMeta>,
    results: Vec<TpursResult>,
    replaces: Vec<TpursReplace>,
    sizes: Vec<Vec<i64>>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// One op call as the bridge described it.
pub(crate) struct CallDesc<'a> {
    pub op: OpId,
    pub args: &'a [CArg<'a>],
    pub writes: &'a [TpursWrite],
    pub returns: &'a [i32],
    pub default_dtype: i32,
    pub precision: Precision,
}

/// The element type of a ScalarType code; other dtypes (float8, quantized) raise
/// `NotImplementedError`, as torch does for a dtype a kernel does not handle.
pub(crate) fn dtype_of(code: i32) -> Result<DType> {
    from_scalar_type(code).ok_or_else(|| unsupported(code))
}

/// ScalarType codes of the complex dtypes the device stores.
const COMPLEX_CODES: [i32; 3] = [8, 9, 10];

/// Refuses a complex dtype (of a tensor or a host number) for an op whose rule does not
/// handle complex values.
fn check_real(code: i32, entry: &OpEntry, complex_ok: bool) -> Result<()> {
    if COMPLEX_CODES.contains(&code) && !complex_ok {
        let name = match code {
            8 => "ComplexHalf",
            9 => "ComplexFloat",
            _ => "ComplexDouble",
        };
        return invalid(
            ErrorKind::Uncovered,
            format!(
                "tpurs: {} has no lowering for {name} (ScalarType {code}) values on the tpu device",
                entry.name
            ),
        );
    }
    Ok(())
}

fn unsupported(code: i32) -> crate::Error {
    {
        let name = match code {
            12..=14 | 16 => "a quantized dtype",
            23..=26 => "a float8 dtype",
            _ => "this dtype",
        };
        crate::Error::Invalid(
            ErrorKind::NotImplemented,
            format!("tpurs: {name} (ScalarType {code}) is not supported on the tpu device"),
        )
    }
}

impl Scratch {
    fn clear(&mut self) {
        self.key.clear();
        self.slots.clear();
        self.slot_meta.clear();
        self.results.clear();
        self.replaces.clear();
    }

    fn slot_of(&mut self, t: &TensorRef) -> Result<usize> {
        let storage = t.storage;
        if let Some(i) = self
            .slots
            .iter()
            .position(|s| std::ptr::eq(&**s, storage.get()))
        {
            return Ok(i);
        }
        let meta = match storage.contents() {
            Contents::Ready(f) => StorageMeta {
                numel: f.numel,
                dtype: f.dtype,
            },
            Contents::Pending { dtype, numel, .. } => StorageMeta { numel, dtype },
            Contents::Empty | Contents::Lost(_) => {
                let dtype = dtype_of(t.dtype)?;
                StorageMeta {
                    numel: (storage.nbytes / dtype.byte_size()) as i64,
                    dtype,
                }
            }
        };
        self.slots.push(storage.to_arc());
        self.slot_meta.push(meta);
        Ok(self.slots.len() - 1)
    }

    /// Appends the cache-key words of one argument.
    fn encode(&mut self, a: &CArg, entry: &OpEntry, device: &mut Option<i32>) -> Result<()> {
        match a {
            CArg::None => self.key.push(kind::NONE as u64),
            CArg::Tensor(t) => {
                check_real(t.dtype, entry, entry.complex)?;
                match *device {
                    None => *device = Some(t.device),
                    Some(d) if d != t.device => {
                        return invalid(
                            ErrorKind::Runtime,
                            format!(
                                "Expected all tensors to be on the same device, but found at least two devices, tpu:{d} and tpu:{}!",
                                t.device
                            ),
                        )
                    }
                    _ => {}
                }
                let slot = self.slot_of(t)?;
                self.key.extend_from_slice(&[
                    kind::TENSOR as u64,
                    t.dtype as u64,
                    slot as u64,
                    t.sizes.len() as u64,
                    // Nonzero offsets are program parameters (`ParamSource::Offset`).
                    (t.offset != 0) as u64,
                ]);
                self.key.extend(t.sizes.iter().map(|&v| v as u64));
                self.key.extend(t.strides.iter().map(|&v| v as u64));
            }
            CArg::Scalar(v) => {
                check_real(v.dtype, entry, entry.complex)?;
                self.key.extend_from_slice(&[
                    kind::SCALAR as u64,
                    v.dtype as u64,
                    v.wrapped as u64,
                ]);
                if entry.bake_scalars {
                    self.key
                        .extend_from_slice(&[v.i as u64, v.f.to_bits(), v.im.to_bits()]);
                }
            }
            CArg::Int(i) => self.key.extend_from_slice(&[kind::INT as u64, *i as u64]),
            CArg::Bool(b) => self.key.extend_from_slice(&[kind::BOOL as u64, *b as u64]),
            CArg::Dtype(d) => {
                check_real(*d, entry, entry.complex)?;
                self.key.extend_from_slice(&[kind::DTYPE as u64, *d as u64]);
            }
            CArg::Float(f) => self
                .key
                .extend_from_slice(&[kind::FLOAT as u64, f.to_bits()]),
            CArg::Str(bytes) | CArg::BoolList(bytes) => {
                let k = if matches!(a, CArg::Str(_)) {
                    kind::STR
                } else {
                    kind::BOOL_LIST
                };
                self.key.extend_from_slice(&[k as u64, bytes.len() as u64]);
                self.key.extend(bytes.iter().map(|&b| b as u64));
            }
            CArg::IntList(items) => {
                self.key
                    .extend_from_slice(&[kind::INT_LIST as u64, items.len() as u64]);
                self.key.extend(items.iter().map(|&v| v as u64));
            }
            CArg::FloatList(items) => {
                self.key
                    .extend_from_slice(&[kind::FLOAT_LIST as u64, items.len() as u64]);
                self.key.extend(items.iter().map(|v| v.to_bits()));
            }
            CArg::List(items) => {
                self.key
                    .extend_from_slice(&[kind::LIST as u64, items.len() as u64]);
                for item in items {
                    self.encode(item, entry, device)?;
                }
            }
        }
        Ok(())
    }
}

/// Converts decoded arguments into the lowering's description (cache misses only).
fn to_arg(a: &CArg, scratch: &mut Scratch) -> Result<EagerArg> {
    Ok(match a {
        CArg::None => Arg::None,
        CArg::Tensor(t) => Arg::Tensor(TensorMeta {
            dtype: dtype_of(t.dtype)?,
            sizes: t.sizes.to_vec(),
            strides: t.strides.to_vec(),
            offset: t.offset,
            slot: scratch.slot_of(t)?,
        }),
        CArg::Scalar(v) => {
            let dtype = dtype_of(v.dtype)?;
            Arg::Scalar(ScalarMeta {
                dtype,
                wrapped: v.wrapped,
                value: scalar_literal(v, dtype),
            })
        }
        CArg::Int(i) => Arg::Int(*i),
        CArg::Bool(b) => Arg::Bool(*b),
        CArg::Float(f) => Arg::Float(*f),
        CArg::Dtype(d) => Arg::Dtype(dtype_of(*d)?),
        CArg::Str(bytes) => Arg::Str(String::from_utf8_lossy(bytes).into_owned()),
        CArg::IntList(items) => Arg::IntList(items.to_vec()),
        CArg::FloatList(items) => Arg::FloatList(items.to_vec()),
        CArg::BoolList(items) => Arg::BoolList(items.iter().map(|&b| b != 0).collect()),
        CArg::List(items) => Arg::List(
            items
                .iter()
                .map(|i| to_arg(i, scratch))
                .collect::<Result<_>>()?,
        ),
    })
}

fn build_call(call: &CallDesc, scratch: &mut Scratch) -> Result<OpCall> {
    let entry = tpurs_ops::op_entry(call.op);
    let args = call
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            CArg::Float(f) if entry.float_input(i) => Ok(Arg::Scalar(ScalarMeta {
                dtype: DType::F64,
                wrapped: true,
                value: Literal::Float(*f),
            })),
            _ => to_arg(a, scratch),
        })
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
            abi::RETURN_FRESH => ReturnSpec::Fresh,
            abi::RETURN_FRESH_LIST => ReturnSpec::FreshList,
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
        precision: call.precision,
    })
}

/// Argument `arg` of a call, or item `item` of that list argument.
pub(crate) fn source_arg<'a, 'b>(
    args: &'a [CArg<'b>],
    arg: usize,
    item: Option<usize>,
) -> Result<&'a CArg<'b>> {
    match (item, &args[arg]) {
        (None, a) => Ok(a),
        (Some(j), CArg::List(items)) => Ok(&items[j]),
        _ => invalid(
            ErrorKind::Runtime,
            "a parameter names an item of a non-list",
        ),
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
pub(crate) fn run(rt: &Runtime, call: &CallDesc) -> Result<TpursOpResults> {
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let s = &mut *guard;
        s.clear();
        let out = run_with(rt, call, s);
        // The call's storages must not outlive it here (torch may free them next).
        s.slots.clear();
        out
    })
}

/// Device-side checks held before the host is made to read them (a loop that never
/// reads its results would otherwise hold them without bound).
const MAX_PENDING_CHECKS: usize = 1024;

fn run_with(rt: &Runtime, call: &CallDesc, s: &mut Scratch) -> Result<TpursOpResults> {
    if rt.pending_checks() >= MAX_PENDING_CHECKS {
        rt.raise_checks()?;
    }
    let entry = tpurs_ops::op_entry(call.op);
    let mut device = None;
    s.key.extend_from_slice(&[
        call.op as u64,
        call.default_dtype as u64,
        call.precision as u64,
    ]);
    for (i, a) in call.args.iter().enumerate() {
        if entry.float_input(i) && matches!(a, CArg::Float(_)) {
            s.key.push(kind::FLOAT as u64); // its value is a program input
        } else {
            s.encode(a, entry, &mut device)?;
        }
    }
    for m in &s.slot_meta {
        s.key.push(m.numel as u64);
        s.key.push(m.dtype as u64);
    }
    let dev = rt.check_device(device.unwrap_or(0) as i64)?;
    let key = std::mem::take(&mut s.key);
    let plan = get_or_lower(rt, &key, || {
        let op_call = build_call(call, s)?;
        let lowered = tpurs_ops::lower(&op_call)?;
        Ok((op_call, lowered))
    });
    s.key = key;
    let plan = plan?;
    crate::known::raise_known_failures(&plan, call.args)?;
    let mode = rt.eager_mode();
    let mut batch = rt.batch(dev);
    if mode == EagerMode::DeferAndFuse {
        let bindings = bind_params(rt, s, call, &plan, dev, &mut batch)?;
        let first = batch.record(&plan, bindings);
        let ends = batch.ends_after(rt.fuse_limit(), &s.key);
        let out = finish(
            rt,
            s,
            &plan,
            dev,
            Produced::Pending(first),
            Some(&mut batch),
        );
        if ends {
            batch.flush(rt, dev)?;
        }
        return out;
    }
    // Launching on its own: anything deferred earlier goes first.
    batch.flush(rt, dev)?;
    drop(batch);
    let params = gather_params(rt, s, call, &plan, dev)?;
    let refs: Vec<&Buffer> = params.iter().map(|b| b.as_ref()).collect();
    let exe = plan.executable(rt)?;
    let start = rt.profile.on(SpanKind::Program).then(now_ns);
    let outs = exe.execute(&refs, dev)?;
    drop(refs);
    drop(params);
    bump(&rt.metrics.op_launches, 1);
    if let Some(start) = start {
        let name = tpurs_ops::op_entry(call.op).name.to_string();
        rt.profile
            .record_program(name, String::new(), dev, start, &outs)?;
    }
    if mode == EagerMode::LaunchBlocking {
        for b in &outs {
            b.block_until_ready()?;
        }
        // Launch-blocking raises a failed device-side check at the op itself.
        for (spec, b) in plan.lowered.outputs.iter().zip(&outs) {
            if let tpurs_ops::OutputSpec::Check(check) = spec {
                if let (true, value) = crate::runtime::read_check(b)? {
                    return Err(check.error(value).into());
                }
            }
        }
    }
    finish(rt, s, &plan, dev, Produced::Buffers(outs), None)
}

/// Whether the op's program carries a check PyTorch reads at the op.
fn checks_at_op(plan: &Plan) -> bool {
    plan.lowered
        .outputs
        .iter()
        .any(|o| matches!(o, tpurs_ops::OutputSpec::Check(c) if c.at_op))
}

/// The current buffer of storage slot `slot`, zero-filled if it was never written.
fn storage_buffer(rt: &Runtime, s: &Scratch, slot: usize, dev: usize) -> Result<Arc<Buffer>> {
    let storage = &s.slots[slot];
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
                scalar_buffer(rt, &source_scalar(call.args, arg, item)?, dev)
            }
            ParamSource::Offset(arg, item) => {
                scalar_buffer(rt, &source_offset(call.args, arg, item)?, dev)
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
                let storage = &s.slots[slot];
                match storage.contents() {
                    Contents::Pending {
                        batch: id, node, ..
                    } if id == batch.id() => Binding::Node(node),
                    Contents::Ready(f) => batch.external(f.buffer, Some(storage)),
                    Contents::Lost(why) => return Err(crate::defer::lost(&why)),
                    _ => {
                        let m = &s.slot_meta[slot];
                        let flat = zeros(rt, dev, m.dtype, m.numel)?;
                        storage.set(flat.clone());
                        batch.external(flat.buffer, Some(storage))
                    }
                }
            }
            ParamSource::Scalar(arg, item) => batch.external(
                scalar_buffer(rt, &source_scalar(call.args, arg, item)?, dev)?,
                None,
            ),
            ParamSource::Offset(arg, item) => batch.external(
                scalar_buffer(rt, &source_offset(call.args, arg, item)?, dev)?,
                None,
            ),
            ParamSource::Rng => batch.external(rng_buffer(rt, dev)?, None),
        };
        bindings.push(b);
    }
    Ok(bindings)
}

/// Gives each output its storage (new tensors, updated arguments, replaced out= storages)
/// and describes the schema's results for the bridge.
fn finish(
    rt: &Runtime,
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
    let mut fresh: Vec<Arc<Storage>> = Vec::new();
    let mut replaced: Vec<(usize, &tpurs_hlo::TensorType, Arc<Storage>)> = Vec::new();
    let mut last: Option<Arc<Buffer>> = None;
    s.sizes.clear();
    for (i, spec) in lowered.outputs.iter().enumerate() {
        let node = first_node + i as u32;
        let contents = match (buffers.as_mut(), batch.as_ref()) {
            (Some(it), _) => {
                let buffer = Arc::new(it.next().expect("one buffer per output"));
                last = Some(buffer.clone());
                let (dtype, numel) = output_type(plan, spec);
                Contents::Ready(Flat::new(buffer, dtype, numel))
            }
            (None, Some(b)) => b.pending(node),
            (None, None) => unreachable!("pending outputs come with their batch"),
        };
        let storage: Arc<Storage> = match spec {
            tpurs_ops::OutputSpec::Fresh(ty) | tpurs_ops::OutputSpec::Replace(_, ty) => {
                s.sizes.push(ty.shape.clone());
                let st = rt.new_storage(dev, ty.numel() as usize * ty.dtype.byte_size());
                st.set_contents(contents);
                Arc::new(st)
            }
            tpurs_ops::OutputSpec::Storage(slot) => {
                let st = s.slots[*slot].clone();
                st.set_contents(contents);
                st
            }
            tpurs_ops::OutputSpec::Check(_) => {
                let st = rt.new_storage(dev, 16);
                st.set_contents(contents);
                Arc::new(st)
            }
        };
        if let Some(b) = batch.as_mut() {
            b.bind(node, &storage);
        }
        match spec {
            tpurs_ops::OutputSpec::Fresh(_) => fresh.push(storage),
            tpurs_ops::OutputSpec::Replace(k, ty) => replaced.push((*k, ty, storage)),
            tpurs_ops::OutputSpec::Check(check) => rt
                .checks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((storage, check.clone())),
            tpurs_ops::OutputSpec::Storage(_) => {}
        }
    }
    if let Some(b) = last {
        *rt.last_output[dev]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(b);
    }
    // A check PyTorch reads at the op raises here, before torch owns any result.
    if checks_at_op(plan) {
        if let Some(b) = batch {
            b.flush(rt, dev)?;
        }
        rt.raise_checks()?;
    }
    for (k, ty, storage) in replaced {
        s.replaces.push(TpursReplace {
            target: k as i32,
            dtype: tpurs_ops::dtype::to_scalar_type(ty.dtype),
            ndim: ty.rank() as i64,
            sizes: std::ptr::null(),
            storage: storage_into_raw(storage),
            nbytes: (ty.numel() as usize * ty.dtype.byte_size()) as i64,
        });
    }
    let fresh: Vec<_> = fresh.into_iter().map(storage_into_raw).collect();
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
        tpurs_ops::OutputSpec::Check(_) => (DType::I64, 2),
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
            tpurs_ops::OutputSpec::Storage(_) | tpurs_ops::OutputSpec::Check(_) => {}
        }
    }
    for (r, rep) in s.replaces.iter_mut().enumerate() {
        rep.sizes = s.sizes[replace_sizes[r]].as_ptr();
    }
    let fresh_result = |n: usize, sizes: &[Vec<i64>]| TpursResult {
        kind: abi::result::FRESH,
        dtype: tpurs_ops::dtype::to_scalar_type(fresh_tys[n].dtype),
        alias: -1,
        device: dev as i32,
        ndim: fresh_tys[n].rank() as i64,
        sizes: sizes[fresh_sizes[n]].as_ptr(),
        storage: fresh[n],
        nbytes: (fresh_tys[n].numel() as usize * fresh_tys[n].dtype.byte_size()) as i64,
    };
    let empty = TpursResult {
        kind: abi::result::UNDEFINED,
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
                    kind: abi::result::LIST,
                    ndim: idx.len() as i64,
                    ..empty
                });
                for &n in idx {
                    s.results.push(fresh_result(n, &s.sizes));
                }
            }
            tpurs_ops::ResultSink::Alias(k) => s.results.push(TpursResult {
                kind: abi::result::ALIAS,
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
