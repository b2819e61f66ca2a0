//! The eager hot path: describe the call as a cache key, find (or compile) its program,
//! gather parameter buffers, execute without waiting, and hand back result storages.

use std::cell::RefCell;
use std::sync::Arc;

use tpurs_hlo::{DType, Literal};
use tpurs_ops::dtype::from_scalar_type;
use tpurs_ops::{Arg, OpCall, OpId, ParamSource, ReturnSpec, ScalarMeta, StorageMeta, TensorMeta};
use tpurs_pjrt::Buffer;

use crate::cache::get_or_compile;
use crate::error::{invalid, ErrorKind, Result};
use crate::ffi::{self, kind, TpursArg, TpursOpResults, TpursReplace, TpursResult, TpursWrite};
use crate::metrics::{bump, metrics};
use crate::runtime::{runtime, Runtime};
use crate::storage::{Flat, Storage};
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

fn dtype_of(code: i32) -> Result<DType> {
    from_scalar_type(code).ok_or_else(|| {
        crate::Error::Invalid(
            ErrorKind::Type,
            format!("tpurs does not support the dtype with ScalarType code {code} on the tpu device"),
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
        // SAFETY: the bridge passes storages created by `storage_new` that outlive the call.
        let storage = unsafe { &*p };
        let meta = match storage.get() {
            Some(f) => StorageMeta {
                numel: f.numel,
                dtype: f.dtype,
            },
            None => {
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
                let (sizes, strides) = unsafe { (slice(a.sizes, a.ndim), slice(a.strides, a.ndim)) };
                self.key.extend_from_slice(&[a.dtype as u64, slot as u64, a.ndim as u64, a.offset as u64]);
                self.key.extend(sizes.iter().map(|&v| v as u64));
                self.key.extend(strides.iter().map(|&v| v as u64));
            }
            kind::SCALAR => {
                self.key.extend_from_slice(&[a.dtype as u64, a.wrapped as u64]);
                if bake {
                    self.key.extend_from_slice(&[a.i as u64, a.f.to_bits()]);
                }
            }
            kind::INT | kind::BOOL | kind::DTYPE => self.key.extend_from_slice(&[a.i as u64, a.dtype as u64]),
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
fn to_arg(a: &TpursArg, scratch: &mut Scratch) -> Result<Arg> {
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
        kind::FLOAT_LIST => Arg::FloatList(unsafe { slice(a.items as *const f64, a.ndim) }.to_vec()),
        kind::BOOL_LIST => {
            Arg::BoolList(unsafe { slice(a.items as *const u8, a.ndim) }.iter().map(|&b| b != 0).collect())
        }
        kind::LIST => {
            let items = unsafe { slice(a.items as *const TpursArg, a.ndim) };
            Arg::List(items.iter().map(|i| to_arg(i, scratch)).collect::<Result<_>>()?)
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
    let args = call.args.iter().map(|a| to_arg(a, scratch)).collect::<Result<Vec<_>>>()?;
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
fn source_arg<'a>(args: &'a [TpursArg], arg: usize, item: Option<usize>) -> &'a TpursArg {
    match item {
        None => &args[arg],
        // SAFETY: list items were validated when the key was built.
        Some(j) => unsafe { &slice(args[arg].items as *const TpursArg, args[arg].ndim)[j] },
    }
}

/// The buffer of a 0-d host number, cached by value.
fn scalar_buffer(rt: &Runtime, a: &TpursArg, device: usize) -> Result<Arc<Buffer>> {
    let dtype = dtype_of(a.dtype)?;
    let bits = if dtype.is_float() { a.f.to_bits() } else { a.i as u64 };
    let key = (a.dtype, bits, device);
    let mut cache = rt.scalars.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = cache.get(&key) {
        return Ok(b.clone());
    }
    let bytes = scalar_bytes(dtype, scalar_literal(a, dtype));
    let buf = Arc::new(rt.client.buffer_from_host(&bytes, element_type(dtype), &[], device)?);
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

/// Runs one call and returns what it produced.
pub(crate) fn run(call: &CallDesc) -> Result<TpursOpResults> {
    let rt = runtime()?;
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let s = &mut *guard;
        s.clear();
        let entry = tpurs_ops::op_entry(call.op);
        let mut device = None;
        s.key.extend_from_slice(&[call.op as u64, call.default_dtype as u64]);
        for a in call.args {
            s.encode(a, entry.bake_scalars, &mut device)?;
        }
        for m in &s.slot_meta {
            s.key.push(m.numel as u64);
            s.key.push(m.dtype as u64);
        }
        let dev = rt.check_device(device.unwrap_or(0) as i64)?;
        let key = std::mem::take(&mut s.key);
        let compiled = get_or_compile(rt, &key, || {
            let op_call = build_call(call, s)?;
            Ok(tpurs_ops::lower(&op_call)?)
        });
        s.key = key;
        let compiled = compiled?;
        let lowered = &compiled.lowered;

        let mut params: Vec<Arc<Buffer>> = Vec::with_capacity(lowered.params.len());
        for p in &lowered.params {
            params.push(match *p {
                ParamSource::Storage(slot) => {
                    // SAFETY: slot pointers were taken from this call's live arguments.
                    let storage = unsafe { &*s.slots[slot] };
                    match storage.get() {
                        Some(f) => f.buffer,
                        None => {
                            let m = &s.slot_meta[slot];
                            let flat = zeros(rt, dev, m.dtype, m.numel)?;
                            storage.set(flat.clone());
                            flat.buffer
                        }
                    }
                }
                ParamSource::Scalar(arg, item) => scalar_buffer(rt, source_arg(call.args, arg, item), dev)?,
                ParamSource::Rng => {
                    let state = rt.next_rng(dev);
                    let bytes: Vec<u8> = state.iter().flat_map(|w| w.to_le_bytes()).collect();
                    Arc::new(rt.client.buffer_from_host(&bytes, tpurs_pjrt::ElementType::U64, &[2], dev)?)
                }
            });
        }
        let refs: Vec<&Buffer> = params.iter().map(|b| b.as_ref()).collect();
        let outs = compiled.exe.execute(&refs, dev)?;
        drop(refs);
        drop(params);
        bump(&metrics().op_launches, 1);

        let mut fresh: Vec<*mut Storage> = Vec::new();
        let mut last: Option<Arc<Buffer>> = None;
        s.sizes.clear();
        for (spec, buf) in lowered.outputs.iter().zip(outs) {
            let buf = Arc::new(buf);
            last = Some(buf.clone());
            match spec {
                tpurs_ops::OutputSpec::Fresh(ty) => {
                    let st = Storage::new(dev, ty.numel() as usize * ty.dtype.byte_size());
                    st.set(Flat { buffer: buf, dtype: ty.dtype, numel: ty.numel() });
                    fresh.push(Box::into_raw(Box::new(st)));
                    s.sizes.push(ty.shape.clone());
                }
                tpurs_ops::OutputSpec::Storage(slot) => {
                    // SAFETY: as above.
                    let storage = unsafe { &*s.slots[*slot] };
                    let m = &s.slot_meta[*slot];
                    storage.set(Flat { buffer: buf, dtype: m.dtype, numel: m.numel });
                }
                tpurs_ops::OutputSpec::Replace(k, ty) => {
                    let st = Storage::new(dev, ty.numel() as usize * ty.dtype.byte_size());
                    st.set(Flat { buffer: buf, dtype: ty.dtype, numel: ty.numel() });
                    s.sizes.push(ty.shape.clone());
                    s.replaces.push(TpursReplace {
                        target: *k as i32,
                        dtype: tpurs_ops::dtype::to_scalar_type(ty.dtype),
                        ndim: ty.rank() as i64,
                        sizes: std::ptr::null(),
                        storage: Box::into_raw(Box::new(st)) as *mut _,
                        nbytes: (ty.numel() as usize * ty.dtype.byte_size()) as i64,
                    });
                }
            }
        }
        if let Some(b) = last {
            *rt.last_output[dev].lock().unwrap_or_else(|e| e.into_inner()) = Some(b);
        }
        // Sizes live in `s.sizes`: fresh outputs first (in order), then replacements.
        let fresh_tys: Vec<&tpurs_hlo::TensorType> = lowered
            .outputs
            .iter()
            .filter_map(|o| match o {
                tpurs_ops::OutputSpec::Fresh(t) => Some(t),
                _ => None,
            })
            .collect();
        let nfresh = fresh_tys.len();
        for (r, rep) in s.replaces.iter_mut().enumerate() {
            rep.sizes = s.sizes[nfresh + r].as_ptr();
        }
        let fresh_result = |n: usize, sizes: &[Vec<i64>]| TpursResult {
            kind: ffi::result::FRESH,
            dtype: tpurs_ops::dtype::to_scalar_type(fresh_tys[n].dtype),
            alias: -1,
            device: dev as i32,
            ndim: fresh_tys[n].rank() as i64,
            sizes: sizes[n].as_ptr(),
            storage: fresh[n] as *mut _,
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
                    s.results.push(TpursResult { kind: ffi::result::LIST, ndim: idx.len() as i64, ..empty });
                    for &n in idx {
                        s.results.push(fresh_result(n, &s.sizes));
                    }
                }
                tpurs_ops::ResultSink::Alias(k) => {
                    s.results.push(TpursResult { kind: ffi::result::ALIAS, alias: *k as i32, ..empty })
                }
                tpurs_ops::ResultSink::Undefined => s.results.push(empty),
            }
        }
        Ok(TpursOpResults {
            n: s.results.len() as i64,
            results: s.results.as_ptr(),
            nreplace: s.replaces.len() as i64,
            replaces: s.replaces.as_ptr(),
        })
    })
}
