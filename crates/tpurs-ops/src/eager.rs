//! The eager driver: one op call over strided views of flat device storages becomes a
//! program. Inputs are read through their views; results that alias mutated arguments
//! (in-place ops, `out=`, batch norm's running statistics) are written back into the
//! storages, and `out=` arguments whose shape changes get new storages (resize).

use tpurs_hlo::{Builder, DType, Precision, TensorType, Value};

use crate::checks::Check;
use crate::ctx::{Arg, Ctx, Inputs, ScalarMeta, TensorArg, WriteTarget};
use crate::dtype::check_can_cast;
use crate::error::{runtime, Result};
use crate::table::{found_dtype, op_entry, OpId, OutDtype};
use crate::view::{read_view, write_view, Start};

/// A device storage referenced by the call: its flat element count and element type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StorageMeta {
    /// Number of elements of the flat buffer.
    pub numel: i64,
    /// Element type of the flat buffer.
    pub dtype: DType,
}

/// A device tensor argument: a strided view of one storage.
#[derive(Clone, Debug)]
pub struct TensorMeta {
    /// Element type.
    pub dtype: DType,
    /// Sizes.
    pub sizes: Vec<i64>,
    /// Strides in elements.
    pub strides: Vec<i64>,
    /// Offset into the storage in elements.
    pub offset: i64,
    /// Index into [`OpCall::storages`].
    pub slot: usize,
}

impl TensorMeta {
    /// The logical tensor type.
    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype, self.sizes.clone())
    }

    /// Number of elements.
    pub fn numel(&self) -> i64 {
        self.sizes.iter().product()
    }

    /// What a rule sees of this tensor.
    pub fn arg(&self) -> TensorArg {
        TensorArg {
            dtype: self.dtype,
            sizes: self.sizes.clone(),
        }
    }
}

/// An argument of an eager call: tensors are strided views of storages.
pub type EagerArg = Arg<TensorMeta>;

/// Where a result of the call goes, as declared by the op's schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnSpec {
    /// A new tensor.
    Fresh,
    /// A new list of tensors (all remaining results).
    FreshList,
    /// The mutated argument `writes[k]`.
    Alias(usize),
}

/// A call as the runtime describes it.
#[derive(Clone, Debug)]
pub struct OpCall {
    /// The op.
    pub op: OpId,
    /// Arguments in schema order.
    pub args: Vec<EagerArg>,
    /// Storages referenced by tensor arguments.
    pub storages: Vec<StorageMeta>,
    /// Mutated tensors, in schema order.
    pub writes: Vec<WriteTarget>,
    /// The schema's returns.
    pub returns: Vec<ReturnSpec>,
    /// `torch.get_default_dtype()`.
    pub default_float: DType,
    /// `torch.get_float32_matmul_precision()`.
    pub precision: Precision,
}

/// Where one program parameter comes from at launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSource {
    /// The flat buffer of storage slot `n`.
    Storage(usize),
    /// A host number: argument index and list index.
    Scalar(usize, Option<usize>),
    /// The storage offset (`i64`, 0-d) of a tensor argument: argument index and list index.
    /// Only nonzero offsets are parameters; a zero offset is part of the cache key.
    Offset(usize, Option<usize>),
    /// The generator state (`u64[2]`) of the call's device.
    Rng,
}

/// What one program output is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputSpec {
    /// A new contiguous tensor of this type.
    Fresh(TensorType),
    /// The new flat buffer of storage slot `n`.
    Storage(usize),
    /// A new flat storage for write target `k` whose shape changed (`out=` resize).
    Replace(usize, TensorType),
    /// A device-side check's `i64[2]` `[failed, offending value]`, for the runtime to read
    /// at the next host wait.
    Check(Check),
}

/// How a schema return is filled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResultSink {
    /// Program output `n` as a new tensor.
    Fresh(usize),
    /// A list of program outputs as new tensors.
    FreshList(Vec<usize>),
    /// The write target `k` (the mutated argument itself).
    Alias(usize),
    /// An undefined tensor.
    Undefined,
}

/// A lowered call: the program and how to launch it.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// StableHLO module text.
    pub mlir: String,
    /// Parameter sources in order.
    pub params: Vec<ParamSource>,
    /// Output descriptions in order.
    pub outputs: Vec<OutputSpec>,
    /// How to fill the schema's returns.
    pub results: Vec<ResultSink>,
}

/// Supplies the values of a call's inputs when the call is lowered into a larger program
/// (fused eager): a storage may already be computed by an earlier op of the same program.
pub trait ParamProvider {
    /// The value standing for `source` (of type `ty`) in builder `b`.
    fn value(&mut self, b: &mut Builder, source: ParamSource, ty: TensorType) -> Value;
}

/// The eager driver's inputs: program parameters for storages, host numbers and the
/// generator, and the storages' current values as writes update them.
struct EagerInputs<'a> {
    call: &'a OpCall,
    params: Vec<ParamSource>,
    storage_params: Vec<Option<Value>>,
    offsets: Vec<((usize, Option<usize>), Value)>,
    storage_current: Vec<Option<Value>>,
    replaced: Vec<Option<Value>>,
    provider: Option<&'a mut dyn ParamProvider>,
}

impl<'a> EagerInputs<'a> {
    fn new(call: &'a OpCall, provider: Option<&'a mut dyn ParamProvider>) -> Self {
        EagerInputs {
            call,
            params: Vec::new(),
            storage_params: vec![None; call.storages.len()],
            offsets: Vec::new(),
            storage_current: vec![None; call.storages.len()],
            replaced: vec![None; call.writes.len()],
            provider,
        }
    }

    fn new_param(&mut self, b: &mut Builder, source: ParamSource, ty: TensorType) -> Value {
        self.params.push(source);
        match self.provider.as_mut() {
            Some(p) => p.value(b, source, ty),
            None => b.param(ty),
        }
    }

    fn storage_param(&mut self, b: &mut Builder, slot: usize) -> Value {
        if let Some(v) = &self.storage_params[slot] {
            return v.clone();
        }
        let s = &self.call.storages[slot];
        let v = self.new_param(
            b,
            ParamSource::Storage(slot),
            TensorType::new(s.dtype, [s.numel]),
        );
        self.storage_params[slot] = Some(v.clone());
        v
    }

    /// Where the view of tensor argument `arg` starts: a parameter unless it is zero.
    fn start(&mut self, b: &mut Builder, arg: usize, item: Option<usize>) -> Result<Start> {
        if self.view(arg, item)?.offset == 0 {
            return Ok(Start::Fixed(0));
        }
        if let Some((_, v)) = self.offsets.iter().find(|(k, _)| *k == (arg, item)) {
            return Ok(Start::At(v.clone()));
        }
        let v = self.new_param(
            b,
            ParamSource::Offset(arg, item),
            TensorType::scalar(DType::I64),
        );
        self.offsets.push(((arg, item), v.clone()));
        Ok(Start::At(v))
    }

    fn view(&self, arg: usize, item: Option<usize>) -> Result<&'a TensorMeta> {
        match self.call.args.get(arg).map(|a| a.item(item)) {
            Some(Arg::Tensor(m)) => Ok(m),
            _ => runtime(format!("argument {arg} is not a device tensor")),
        }
    }

    /// Writes `value` into write target `k`: through its view into the storage, or as a new
    /// storage when an `out=` argument changes shape.
    fn write_target(
        &mut self,
        b: &mut Builder,
        k: usize,
        value: Value,
        policy: OutDtype,
    ) -> Result<()> {
        let target = self.call.writes[k];
        let meta = self.view(target.arg, target.item)?;
        match policy {
            OutDtype::Same(message) if target.is_out && value.dtype() != meta.dtype => {
                return runtime(message(meta.dtype, value.dtype()));
            }
            OutDtype::RealOfComplex if target.is_out => {
                let input = self.view(0, None)?.dtype;
                if input.is_complex() && !meta.dtype.is_complex() {
                    check_can_cast(value.dtype(), meta.dtype)?;
                } else if meta.dtype != input {
                    return runtime(found_dtype(meta.dtype, input));
                }
            }
            OutDtype::AnyCast => {}
            _ => check_can_cast(value.dtype(), meta.dtype)?,
        }
        // A conversion to complex32 rounds already.
        let value = if value.dtype() == meta.dtype {
            stored(b, &value)
        } else {
            b.convert(&value, meta.dtype)
        };
        if value.shape() != meta.sizes.as_slice() {
            if target.is_out {
                self.replaced[k] = Some(value);
                return Ok(());
            }
            return runtime(format!(
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                meta.sizes,
                value.shape()
            ));
        }
        let slot = meta.slot;
        let storage = &self.call.storages[slot];
        let covers_all = meta.numel() == crate::view::storage_numel_as(storage, meta.dtype)
            && meta.numel() * meta.dtype.byte_size() as i64
                == storage.numel * storage.dtype.byte_size() as i64
            && crate::view::is_dense_from_zero(meta);
        let current = match (&self.storage_current[slot], covers_all) {
            (Some(v), _) => Some(v.clone()),
            (None, true) => None,
            (None, false) => Some(self.storage_param(b, slot)),
        };
        let start = self.start(b, target.arg, target.item)?;
        let updated = write_view(b, current.as_ref(), &value, (meta, &start), storage)?;
        self.storage_current[slot] = Some(updated);
        Ok(())
    }
}

impl Inputs for EagerInputs<'_> {
    fn tensor(&mut self, b: &mut Builder, arg: usize, item: Option<usize>) -> Result<Value> {
        let m = self.view(arg, item)?;
        let flat = self.storage_param(b, m.slot);
        let start = self.start(b, arg, item)?;
        read_view(b, &flat, m, &start)
    }

    fn scalar(
        &mut self,
        b: &mut Builder,
        arg: usize,
        item: Option<usize>,
        s: &ScalarMeta,
    ) -> Value {
        self.new_param(
            b,
            ParamSource::Scalar(arg, item),
            TensorType::scalar(s.dtype),
        )
    }

    fn rng_state(&mut self, b: &mut Builder) -> Value {
        self.new_param(b, ParamSource::Rng, TensorType::new(DType::U64, [2]))
    }

    fn is_contiguous(&self, arg: usize) -> bool {
        self.view(arg, None)
            .is_ok_and(|m| crate::view::is_contiguous(&m.sizes, &m.strides))
    }
}

/// Lowers one call with its table rule: builds the program, writes mutated arguments back,
/// and records where parameters come from and results go.
pub fn lower(call: &OpCall) -> Result<Lowered> {
    let (b, op) = lower_into(Builder::new(), call, None)?;
    Ok(Lowered {
        mlir: b.finish(&op.values),
        params: op.params,
        outputs: op.outputs,
        results: op.results,
    })
}

/// One call lowered into a builder shared with other calls.
pub struct LoweredOp {
    /// Parameter sources in the order the call asked for them.
    pub params: Vec<ParamSource>,
    /// Output descriptions.
    pub outputs: Vec<OutputSpec>,
    /// How to fill the schema's returns.
    pub results: Vec<ResultSink>,
    /// The flat value of each output, in `outputs` order.
    pub values: Vec<Value>,
}

/// Lowers one call into `b`; `provider` supplies input values (new parameters when `None`).
pub fn lower_into<'a>(
    b: Builder,
    call: &'a OpCall,
    provider: Option<&'a mut dyn ParamProvider>,
) -> Result<(Builder, LoweredOp)> {
    let mut b = b;
    b.set_precision(call.precision);
    let entry = op_entry(call.op);
    let args: Vec<Arg> = call
        .args
        .iter()
        .map(|a| a.map_tensors(&TensorMeta::arg))
        .collect();
    let mut inputs = EagerInputs::new(call, provider);
    let mut ctx = Ctx::new(
        b,
        entry.name,
        &args,
        &call.writes,
        call.default_float,
        &mut inputs,
    )
    .with_scalars_as_inputs(!entry.bake_scalars);
    let results = (entry.rule)(&mut ctx)?;
    let done = ctx.finish();
    let (mut b, mut written) = (done.b, done.written);
    // Results that alias a mutated argument are written back unless the rule wrote them.
    let mut sinks = Vec::new();
    let mut fresh: Vec<Value> = Vec::new();
    let mut results = results.into_iter();
    let implicit_writes = call.returns.is_empty() && !call.writes.is_empty();
    if implicit_writes {
        for (k, r) in results.by_ref().take(call.writes.len()).enumerate() {
            if let Some(v) = r {
                written[k].get_or_insert(v);
            }
        }
    }
    for spec in &call.returns {
        match *spec {
            ReturnSpec::Alias(k) => {
                if let Some(v) = results.next().flatten() {
                    written[k].get_or_insert(v);
                }
                sinks.push(ResultSink::Alias(k));
            }
            ReturnSpec::Fresh => match results.next().flatten() {
                Some(v) => {
                    sinks.push(ResultSink::Fresh(fresh.len()));
                    fresh.push(v);
                }
                None => sinks.push(ResultSink::Undefined),
            },
            ReturnSpec::FreshList => {
                let mut idx = Vec::new();
                for v in results.by_ref().flatten() {
                    idx.push(fresh.len());
                    fresh.push(v);
                }
                sinks.push(ResultSink::FreshList(idx));
            }
        }
    }
    for (k, w) in written.into_iter().enumerate() {
        if let Some(v) = w {
            inputs.write_target(&mut b, k, v, entry.out_dtype)?;
        }
    }

    let mut outputs = Vec::new();
    let mut out_values = Vec::new();
    for v in fresh {
        outputs.push(OutputSpec::Fresh(v.ty.clone()));
        let v = stored(&mut b, &v);
        out_values.push(b.reshape(&v, &[v.ty.numel()])?);
    }
    for (slot, cur) in inputs.storage_current.iter().enumerate() {
        if let Some(v) = cur {
            outputs.push(OutputSpec::Storage(slot));
            out_values.push(v.clone());
        }
    }
    for (k, rep) in inputs.replaced.iter().enumerate() {
        if let Some(v) = rep {
            outputs.push(OutputSpec::Replace(k, v.ty.clone()));
            out_values.push(b.reshape(v, &[v.ty.numel()])?);
        }
    }
    for (v, check) in done.checks {
        outputs.push(OutputSpec::Check(check));
        out_values.push(v);
    }
    Ok((
        b,
        LoweredOp {
            params: inputs.params,
            outputs,
            results: sinks,
            values: out_values,
        },
    ))
}

/// `v` as a storage holds it: complex32 values are computed in complex64 and rounded to
/// half-precision parts where an op's result is stored, as CPU PyTorch rounds each op's.
fn stored(b: &mut Builder, v: &Value) -> Value {
    if v.dtype() == DType::C32 {
        b.round_complex32(v)
    } else {
        v.clone()
    }
}
