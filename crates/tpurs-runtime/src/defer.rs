//! Fused eager: ops are recorded into a per-device batch instead of launched, and the batch
//! runs as one program when a value is needed (a read to the host, a synchronize, a copy
//! between devices) or when it is long enough (`Batch::ends_after`: at `TPURS_FUSE_LIMIT`
//! ops, or past half of it at an op chosen by its content). A steady loop replays the same
//! batches, so each compiles once and every later iteration is a cache hit.
//!
//! Lowering (and so every shape or dtype error) still happens at the op call; only the
//! launch is deferred. Outputs nobody holds any more at flush time are not materialised.
//!
//! Where a batch ends must not drift from one iteration to the next, or every iteration
//! would compile new programs: so a batch ends at content-defined ops rather than at a
//! fixed count, at every read to the host (even of a value already computed) and after
//! every optimizer step (a hook installed from Python).

use std::hash::BuildHasher;
use std::sync::{Arc, Weak};

use rustc_hash::FxBuildHasher;

use tpurs_hlo::{Builder, TensorType, Value};
use tpurs_ops::{lower_into, ParamProvider, ParamSource};
use tpurs_pjrt::Buffer;

use crate::cache::{get_or_compile_fused, Plan};
use crate::error::{Error, Result};
use crate::metrics::bump;
use crate::profile::{now_ns, SpanKind};
use crate::runtime::Runtime;
use crate::storage::{Contents, Flat, Storage};
use crate::transfer::{dtype_of_element, element_type};

/// How a recorded op's parameter is fed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Binding {
    /// External buffer `k` of the batch.
    External(u32),
    /// Output `n` of an earlier op of the batch.
    Node(u32),
}

/// A node's buffer once its op ran, or why it has none.
type NodeResult = std::result::Result<Arc<Buffer>, Arc<str>>;

struct Node {
    /// The storages holding the node's value: its op's output, and those a whole-storage
    /// copy made share it.
    storages: Vec<Weak<Storage>>,
    ty: TensorType,
}

/// A node the program returns, with the storages still waiting for it.
type LiveNode = (u32, Vec<Arc<Storage>>);

/// The ops recorded on one device since the last flush.
pub(crate) struct Batch {
    id: u64,
    ops: Vec<(Arc<Plan>, Vec<Binding>)>,
    externals: Vec<Arc<Buffer>>,
    /// The storage each external was read from (none for scalars and random state).
    sources: Vec<Option<Weak<Storage>>>,
    key: Vec<u64>,
    nodes: Vec<Node>,
}

impl Batch {
    /// An empty batch; `id` must be unique within its runtime.
    pub fn new(id: u64) -> Self {
        Batch {
            id,
            ops: Vec::new(),
            externals: Vec::new(),
            sources: Vec::new(),
            key: Vec::new(),
            nodes: Vec::new(),
        }
    }

    /// A profile name for the batch's program and the ops it fused.
    fn describe(&self) -> (String, String) {
        let names: Vec<&str> = self
            .ops
            .iter()
            .map(|(plan, _)| tpurs_ops::op_entry(plan.call.op).name)
            .collect();
        (format!("fused {} ops", names.len()), names.join(", "))
    }

    /// Whether the batch ends after an op whose signature is `key` was recorded: at `limit`
    /// ops, or past half of it at an op whose signature hashes to a boundary (1 op in 16).
    /// Content-defined ends make a loop that never reads the host end its batches at the
    /// same ops every iteration, so the batches repeat and compile once; ends at a fixed op
    /// count would fall elsewhere in each iteration and compile anew for many iterations.
    pub fn ends_after(&self, limit: usize, key: &[u64]) -> bool {
        let n = self.ops.len();
        n >= limit || (n >= limit / 2 && mix(FxBuildHasher.hash_one(key)).is_multiple_of(16))
    }

    /// The externals among `aliases` not to donate: those another holder than the batch
    /// still shares. One only the batch holds is dead once the program ran (its storage
    /// waits for the output). The device's last output lets go of a donated buffer: the
    /// batch's own outputs, which replace it there, are ready only after their inputs.
    fn kept_buffers(&self, rt: &Runtime, device: usize, aliases: &[(usize, usize)]) -> Vec<i64> {
        {
            let mut last = rt.last_output[device]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let aliased = |b: &Arc<Buffer>| {
                aliases
                    .iter()
                    .any(|&(k, _)| Arc::ptr_eq(b, &self.externals[k]))
            };
            if last.as_ref().is_some_and(aliased) {
                *last = None;
            }
        }
        aliases
            .iter()
            .filter(|&&(k, _)| Arc::strong_count(&self.externals[k]) > 1)
            .map(|&(k, _)| k as i64)
            .collect()
    }

    /// The id pending contents of this batch carry.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Adds an external input buffer; a buffer already bound (a storage read twice, a cached
    /// scalar of the same value) is passed once. Equal scalars share one cached buffer, so the
    /// sharing pattern only changes when values start or stop coinciding, which costs one
    /// new program.
    /// `source` is the storage it was read from, if any.
    pub fn external(&mut self, buffer: Arc<Buffer>, source: Option<&Arc<Storage>>) -> Binding {
        if let Some(i) = self.externals.iter().position(|b| Arc::ptr_eq(b, &buffer)) {
            return Binding::External(i as u32);
        }
        self.externals.push(buffer);
        self.sources.push(source.map(Arc::downgrade));
        Binding::External(self.externals.len() as u32 - 1)
    }

    /// `(external, output)` pairs where the program's output `output` (an index into `live`)
    /// is the new value of the storage external `external` was read from, with its type:
    /// the output may take over the external's buffer. In the key, since the program text
    /// marks them.
    fn aliases(&self, live: &[LiveNode]) -> Vec<(usize, usize)> {
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for (out, (n, storages)) in live.iter().enumerate() {
            let ty = &self.nodes[*n as usize].ty;
            let found = self.sources.iter().enumerate().find(|(k, source)| {
                let buffer = &self.externals[*k];
                source.as_ref().is_some_and(|w| {
                    storages
                        .iter()
                        .any(|s| std::ptr::eq(w.as_ptr(), Arc::as_ptr(s)))
                }) && buffer.element_type() == element_type(ty.dtype)
                    && buffer.dims() == ty.shape.as_slice()
                    && !pairs.iter().any(|(j, _)| j == k)
            });
            if let Some((k, _)) = found {
                pairs.push((k, out));
            }
        }
        pairs
    }

    /// Records an op; returns the node index of its first output.
    pub fn record(&mut self, plan: &Arc<Plan>, bindings: Vec<Binding>) -> u32 {
        self.key.push(plan.id);
        for b in &bindings {
            self.key.push(match *b {
                Binding::External(k) => (k as u64) << 1,
                Binding::Node(n) => ((n as u64) << 1) | 1,
            });
        }
        self.ops.push((plan.clone(), bindings));
        let first = self.nodes.len() as u32;
        for spec in &plan.lowered.outputs {
            let ty = match spec {
                tpurs_ops::OutputSpec::Fresh(t) | tpurs_ops::OutputSpec::Replace(_, t) => {
                    TensorType::new(t.dtype, [t.numel()])
                }
                tpurs_ops::OutputSpec::Storage(slot) => {
                    let m = &plan.call.storages[*slot];
                    TensorType::new(m.dtype, [m.numel])
                }
                tpurs_ops::OutputSpec::Check(_) => TensorType::new(tpurs_hlo::DType::I64, [2]),
            };
            self.nodes.push(Node {
                storages: Vec::new(),
                ty,
            });
        }
        first
    }

    /// The pending contents of node `n`.
    pub fn pending(&self, n: u32) -> Contents {
        let ty = &self.nodes[n as usize].ty;
        Contents::Pending {
            batch: self.id,
            node: n,
            dtype: ty.dtype,
            numel: ty.shape[0],
        }
    }

    /// Says that `storage` holds node `n` (and sets its contents to say so).
    pub fn bind(&mut self, n: u32, storage: &Arc<Storage>) {
        storage.set_contents(self.pending(n));
        self.nodes[n as usize]
            .storages
            .push(Arc::downgrade(storage));
    }

    /// Launches the batch as one program and makes its live outputs ready.
    pub fn flush(&mut self, rt: &Runtime, device: usize) -> Result<()> {
        if self.ops.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(self, Batch::new(rt.next_batch_id()));
        let live: Vec<LiveNode> = batch
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(n, node)| {
                let waiting: Vec<Arc<Storage>> = node
                    .storages
                    .iter()
                    .filter_map(Weak::upgrade)
                    .filter(|s| {
                        matches!(s.contents(), Contents::Pending { batch: b, node: m, .. }
                            if b == batch.id && m == n as u32)
                    })
                    .collect();
                (!waiting.is_empty()).then_some((n as u32, waiting))
            })
            .collect();
        let aliases = batch.aliases(&live);
        let mut key = batch.key.clone();
        key.push(u64::MAX);
        key.extend(live.iter().map(|(n, _)| *n as u64));
        key.push(u64::MAX);
        key.extend(
            aliases
                .iter()
                .map(|&(k, out)| ((k as u64) << 32) | out as u64),
        );
        let result =
            get_or_compile_fused(rt, &key, || build(&batch, &live, &aliases)).and_then(|f| {
                let args: Vec<&Buffer> = batch.externals.iter().map(|b| b.as_ref()).collect();
                let kept = batch.kept_buffers(rt, device, &aliases);
                let start = rt.profile.on(SpanKind::Program).then(now_ns);
                let outs = f.exe.execute_donating(&args, device, &kept)?;
                bump(
                    &rt.metrics.donated_buffers,
                    (aliases.len() - kept.len()) as u64,
                );
                if let Some(start) = start {
                    let (name, ops) = batch.describe();
                    rt.profile.record_program(name, ops, device, start, &outs)?;
                }
                Ok(outs)
            });
        let (outs, failure) = match result {
            Ok(outs) => {
                bump(&rt.metrics.op_launches, 1);
                let outs = outs.into_iter().map(|b| Ok(Arc::new(b))).collect();
                (outs, None)
            }
            Err(_) => batch.replay(rt, &live, device),
        };
        let mut last = None;
        for ((n, storages), out) in live.iter().zip(outs) {
            let ty = &batch.nodes[*n as usize].ty;
            let contents = match out {
                Ok(buffer) => {
                    last = Some(buffer.clone());
                    Contents::Ready(Flat::new(buffer, ty.dtype, ty.shape[0]))
                }
                // A tensor whose op failed raises when read, never reads as zeros.
                Err(why) => Contents::Lost(why),
            };
            for s in storages {
                s.set_contents(contents.clone());
            }
        }
        if let Some(b) = last {
            *rt.last_output[device]
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(b);
        }
        failure.map_or(Ok(()), Err)
    }

    /// Runs a batch whose fused program failed op by op, each op's own program: the ops
    /// before the failing one (and those not fed by it) keep their results. Returns each
    /// live node's buffer or why it has none, and the first op's error.
    fn replay(
        &self,
        rt: &Runtime,
        live: &[LiveNode],
        device: usize,
    ) -> (Vec<NodeResult>, Option<Error>) {
        let mut nodes: Vec<NodeResult> = Vec::with_capacity(self.nodes.len());
        let mut first_error = None;
        for (plan, bindings) in &self.ops {
            let args: std::result::Result<Vec<Arc<Buffer>>, Arc<str>> = bindings
                .iter()
                .map(|b| match *b {
                    Binding::External(k) => Ok(self.externals[k as usize].clone()),
                    Binding::Node(n) => nodes[n as usize].clone(),
                })
                .collect();
            let outs = args.and_then(|args| {
                let refs: Vec<&Buffer> = args.iter().map(|b| b.as_ref()).collect();
                let run = plan
                    .executable(rt)
                    .and_then(|exe| Ok(exe.execute(&refs, device)?));
                run.map_err(|e| {
                    let why: Arc<str> = e.to_string().into();
                    first_error.get_or_insert(e);
                    why
                })
            });
            match outs {
                Ok(outs) => {
                    bump(&rt.metrics.op_launches, 1);
                    nodes.extend(outs.into_iter().map(|b| Ok(Arc::new(b))));
                }
                Err(why) => {
                    let n = plan.lowered.outputs.len();
                    nodes.extend(std::iter::repeat_n(Err(why), n));
                }
            }
        }
        let outs = live
            .iter()
            .map(|(n, _)| nodes[*n as usize].clone())
            .collect();
        (outs, first_error)
    }
}

/// Feeds a re-lowered op from the batch's externals and earlier nodes.
struct Feed<'a> {
    bindings: &'a [Binding],
    externals: &'a [Value],
    nodes: &'a [Value],
    next: usize,
}

impl ParamProvider for Feed<'_> {
    fn value(&mut self, _b: &mut Builder, _source: ParamSource, ty: TensorType) -> Value {
        let b = self.bindings[self.next];
        self.next += 1;
        match b {
            // A complex32 storage's buffer is a complex64 one.
            Binding::External(k) => {
                let v = &self.externals[k as usize];
                v.spelled_as(ty.dtype).unwrap_or_else(|| v.clone())
            }
            Binding::Node(n) => self.nodes[n as usize].clone(),
        }
    }
}

/// The module text of a batch: every op lowered into one program, live nodes returned,
/// each of `aliases` marked.
fn build(batch: &Batch, live: &[LiveNode], aliases: &[(usize, usize)]) -> Result<String> {
    let mut b = Builder::new();
    let externals: Vec<Value> = batch
        .externals
        .iter()
        .map(|buf| {
            b.param(TensorType::new(
                dtype_of_element(buf.element_type()),
                buf.dims(),
            ))
        })
        .collect();
    let mut nodes: Vec<Value> = Vec::with_capacity(batch.nodes.len());
    for (plan, bindings) in &batch.ops {
        let mut feed = Feed {
            bindings,
            externals: &externals,
            nodes: &nodes,
            next: 0,
        };
        let (next, op) = lower_into(b, &plan.call, Some(&mut feed))?;
        b = next;
        nodes.extend(op.values);
    }
    let outs: Vec<Value> = live
        .iter()
        .map(|(n, _)| nodes[*n as usize].clone())
        .collect();
    for &(k, out) in aliases {
        b.alias_output(k, out);
    }
    Ok(b.finish(&outs))
}

/// Makes sure `storage` holds a computed buffer (flushing its device's batch if it is
/// pending) and returns it; `None` when nothing was ever written.
pub fn ready(rt: &Runtime, storage: &Storage) -> Result<Option<Flat>> {
    if let Contents::Pending { .. } = storage.contents() {
        let mut batch = rt.batch(storage.device);
        batch.flush(rt, storage.device)?;
    }
    Ok(match storage.contents() {
        Contents::Ready(f) => Some(f),
        Contents::Lost(why) => return Err(lost(&why)),
        _ => None,
    })
}

/// The error of reading a tensor whose program failed.
pub(crate) fn lost(why: &str) -> crate::Error {
    crate::Error::Invalid(
        crate::error::ErrorKind::Runtime,
        format!("this tensor has no values: the program that computes it failed: {why}"),
    )
}

/// MurmurHash3's 64-bit finalizer: spreads every input bit over the low bits that pick a
/// boundary (FxHash leaves them weakly mixed: the keys of one loop could miss every boundary).
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}
