//! What the runtime tells a rule about one op call, the context a rule builds in, and the
//! driver that turns a call into a program (`lower`).

use tpurs_hlo::{Builder, DType, Literal, TensorType, Value};

use crate::dtype::{check_can_cast, Participation};
use crate::error::{runtime, Error, Result};
use crate::table::{op_entry, OpId};
use crate::view::{read_view, write_view};

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
}

/// A number known on the host: a `Scalar` argument or a 0-d CPU tensor.
#[derive(Clone, Copy, Debug)]
pub struct ScalarMeta {
    /// Element type (F64 / I64 / Bool for Python numbers).
    pub dtype: DType,
    /// True for Python numbers (`Scalar` args and wrapped-number tensors).
    pub wrapped: bool,
    /// The value, used only by ops registered with baked scalars.
    pub value: Literal,
}

/// One argument of an op call, as the rule sees it.
#[derive(Clone, Debug)]
pub enum Arg {
    /// `None` or an undefined tensor.
    None,
    /// A device tensor.
    Tensor(TensorMeta),
    /// A host number (Scalar or 0-d CPU tensor), passed at run time.
    Scalar(ScalarMeta),
    /// An `int` / `SymInt` (also memory formats, layouts, reductions).
    Int(i64),
    /// A `float`.
    Float(f64),
    /// A `bool`.
    Bool(bool),
    /// A `str`.
    Str(String),
    /// A `ScalarType`.
    Dtype(DType),
    /// An `int[]`.
    IntList(Vec<i64>),
    /// A `float[]`.
    FloatList(Vec<f64>),
    /// A `bool[]`.
    BoolList(Vec<bool>),
    /// A `Tensor[]` or `Tensor?[]` (elements are `Tensor`, `Scalar` or `None`).
    List(Vec<Arg>),
}

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

/// One tensor the op mutates: argument index, index within a list argument, and whether it
/// is an `out=` argument (which may be resized) rather than an in-place `self`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteTarget {
    /// Argument index.
    pub arg: usize,
    /// Index inside a tensor-list argument.
    pub item: Option<usize>,
    /// True for `out=` arguments.
    pub is_out: bool,
}

/// A call as the runtime describes it.
#[derive(Clone, Debug)]
pub struct OpCall {
    /// The op.
    pub op: OpId,
    /// Arguments in schema order.
    pub args: Vec<Arg>,
    /// Storages referenced by tensor arguments.
    pub storages: Vec<StorageMeta>,
    /// Mutated tensors, in schema order.
    pub writes: Vec<WriteTarget>,
    /// The schema's returns.
    pub returns: Vec<ReturnSpec>,
    /// `torch.get_default_dtype()`.
    pub default_float: DType,
}

/// Where one program parameter comes from at launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSource {
    /// The flat buffer of storage slot `n`.
    Storage(usize),
    /// A host number: argument index and list index.
    Scalar(usize, Option<usize>),
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

/// A rule result: `None` stands for an undefined tensor.
pub type Out = Option<Value>;

/// The context a lowering rule builds in.
pub struct Ctx<'a> {
    /// The program builder.
    pub b: Builder,
    /// The op's full name, e.g. `add_.Tensor`.
    pub name: &'static str,
    call: &'a OpCall,
    params: Vec<ParamSource>,
    storage_params: Vec<Option<Value>>,
    storage_current: Vec<Option<Value>>,
    scalar_params: Vec<((usize, Option<usize>), Value)>,
    explicit_writes: Vec<Option<Value>>,
    replaced: Vec<Option<Value>>,
    rng: Option<Value>,
    provider: Option<&'a mut dyn ParamProvider>,
}

/// Supplies the values of a call's inputs when the call is lowered into a larger program
/// (fused eager): a storage may already be computed by an earlier op of the same program.
pub trait ParamProvider {
    /// The value standing for `source` (of type `ty`) in builder `b`.
    fn value(&mut self, b: &mut Builder, source: ParamSource, ty: TensorType) -> Value;
}

impl<'a> Ctx<'a> {
    fn new(call: &'a OpCall, name: &'static str) -> Self {
        Ctx {
            b: Builder::new(),
            name,
            call,
            params: Vec::new(),
            storage_params: vec![None; call.storages.len()],
            storage_current: vec![None; call.storages.len()],
            scalar_params: Vec::new(),
            explicit_writes: vec![None; call.writes.len()],
            replaced: vec![None; call.writes.len()],
            rng: None,
            provider: None,
        }
    }

    fn new_param(&mut self, source: ParamSource, ty: TensorType) -> Value {
        self.params.push(source);
        match self.provider.as_mut() {
            Some(p) => p.value(&mut self.b, source, ty),
            None => self.b.param(ty),
        }
    }

    /// The overload name (`Tensor` in `add.Tensor`; empty when there is none).
    pub fn overload(&self) -> &'static str {
        self.name.split_once('.').map_or("", |(_, o)| o)
    }

    /// True when the op writes into its first argument (`add_`).
    pub fn is_inplace(&self) -> bool {
        self.name
            .split('.')
            .next()
            .is_some_and(|n| n.ends_with('_'))
    }

    /// Number of arguments.
    pub fn num_args(&self) -> usize {
        self.call.args.len()
    }

    /// Argument `i` (`Arg::None` past the end).
    pub fn arg(&self, i: usize) -> &'a Arg {
        self.call.args.get(i).unwrap_or(&Arg::None)
    }

    /// `torch.get_default_dtype()`.
    pub fn default_float(&self) -> DType {
        self.call.default_float
    }

    /// The mutated tensors of this call.
    pub fn writes(&self) -> &'a [WriteTarget] {
        &self.call.writes
    }

    /// Metadata of the device tensor argument `i` (or of list item `item`).
    pub fn meta(&self, i: usize, item: Option<usize>) -> Result<&'a TensorMeta> {
        match (self.arg(i), item) {
            (Arg::Tensor(m), None) => Ok(m),
            (Arg::List(l), Some(j)) => match l.get(j) {
                Some(Arg::Tensor(m)) => Ok(m),
                _ => Err(self.bad_arg(i, "a device tensor")),
            },
            _ => Err(self.bad_arg(i, "a device tensor")),
        }
    }

    /// Type of argument `i` without reading it: tensors and host numbers.
    pub fn ty(&self, i: usize) -> Result<TensorType> {
        match self.arg(i) {
            Arg::Tensor(m) => Ok(m.ty()),
            Arg::Scalar(s) => Ok(TensorType::scalar(s.dtype)),
            _ => Err(self.bad_arg(i, "a tensor")),
        }
    }

    /// True when argument `i` is present (not `None`).
    pub fn has(&self, i: usize) -> bool {
        !matches!(self.arg(i), Arg::None)
    }

    fn bad_arg(&self, i: usize, what: &str) -> Error {
        Error::Type(format!(
            "{}: argument {i} must be {what}, got {:?}",
            self.name,
            self.arg(i)
        ))
    }

    /// The value of argument `i`: a device tensor read through its view, or a host number
    /// as a 0-d runtime parameter.
    pub fn tensor(&mut self, i: usize) -> Result<Value> {
        self.value_of(i, None)
    }

    /// Like [`Ctx::tensor`] for `None`-able arguments.
    pub fn opt_tensor(&mut self, i: usize) -> Result<Option<Value>> {
        if self.has(i) {
            self.tensor(i).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Elements of a list argument as values (`None` items stay `None`).
    pub fn list(&mut self, i: usize) -> Result<Vec<Option<Value>>> {
        let Arg::List(items) = self.arg(i) else {
            return Err(self.bad_arg(i, "a list of tensors"));
        };
        (0..items.len())
            .map(|j| match &items[j] {
                Arg::None => Ok(None),
                _ => self.value_of(i, Some(j)).map(Some),
            })
            .collect()
    }

    /// Elements of a list argument, all required.
    pub fn tensors(&mut self, i: usize) -> Result<Vec<Value>> {
        let name = self.name;
        self.list(i)?
            .into_iter()
            .map(|v| v.ok_or_else(|| Error::Type(format!("{name}: undefined tensor in list"))))
            .collect()
    }

    /// Number of items in list argument `i`.
    pub fn list_len(&self, i: usize) -> usize {
        match self.arg(i) {
            Arg::List(l) => l.len(),
            Arg::FloatList(l) => l.len(),
            Arg::IntList(l) => l.len(),
            _ => 0,
        }
    }

    /// How argument `i` (or list item) takes part in type promotion.
    pub fn participation(&self, i: usize, item: Option<usize>) -> Participation {
        let arg = match item {
            None => self.arg(i),
            Some(j) => match self.arg(i) {
                Arg::List(l) => l.get(j).unwrap_or(&Arg::None),
                _ => &Arg::None,
            },
        };
        match arg {
            Arg::Scalar(s) if s.wrapped => Participation::Wrapped,
            Arg::Scalar(_) => Participation::ZeroDim,
            Arg::Tensor(m) if m.sizes.is_empty() => Participation::ZeroDim,
            _ => Participation::Dim,
        }
    }

    fn value_of(&mut self, i: usize, item: Option<usize>) -> Result<Value> {
        let arg = match item {
            None => self.arg(i),
            Some(j) => match self.arg(i) {
                Arg::List(l) => l.get(j).unwrap_or(&Arg::None),
                _ => &Arg::None,
            },
        };
        match arg {
            Arg::Tensor(m) => {
                let flat = self.storage_param(m.slot);
                Ok(read_view(&mut self.b, &flat, m)?)
            }
            Arg::Scalar(s) => {
                if let Some((_, v)) = self.scalar_params.iter().find(|(k, _)| *k == (i, item)) {
                    return Ok(v.clone());
                }
                let v = self.new_param(ParamSource::Scalar(i, item), TensorType::scalar(s.dtype));
                self.scalar_params.push(((i, item), v.clone()));
                Ok(v)
            }
            _ => Err(self.bad_arg(i, "a tensor")),
        }
    }

    fn storage_param(&mut self, slot: usize) -> Value {
        if let Some(v) = &self.storage_params[slot] {
            return v.clone();
        }
        let s = &self.call.storages[slot];
        let v = self.new_param(
            ParamSource::Storage(slot),
            TensorType::new(s.dtype, [s.numel]),
        );
        self.storage_params[slot] = Some(v.clone());
        v
    }

    /// A host number baked into the program (only for ops registered with baked scalars).
    pub fn scalar_value(&self, i: usize) -> Result<Literal> {
        match self.arg(i) {
            Arg::Scalar(s) => Ok(s.value),
            Arg::Int(v) => Ok(Literal::Int(*v)),
            Arg::Float(v) => Ok(Literal::Float(*v)),
            Arg::Bool(v) => Ok(Literal::Bool(*v)),
            _ => Err(self.bad_arg(i, "a number")),
        }
    }

    /// Argument `i` as an int.
    pub fn int(&self, i: usize) -> Result<i64> {
        match self.arg(i) {
            Arg::Int(v) => Ok(*v),
            Arg::Bool(v) => Ok(*v as i64),
            _ => Err(self.bad_arg(i, "an int")),
        }
    }

    /// Argument `i` as an int, or `default` when it is `None`.
    pub fn int_or(&self, i: usize, default: i64) -> Result<i64> {
        if self.has(i) {
            self.int(i)
        } else {
            Ok(default)
        }
    }

    /// Argument `i` as an optional int.
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        if self.has(i) {
            self.int(i).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Argument `i` as a float.
    pub fn float(&self, i: usize) -> Result<f64> {
        match self.arg(i) {
            Arg::Float(v) => Ok(*v),
            Arg::Int(v) => Ok(*v as f64),
            Arg::Scalar(s) => Ok(s.value.as_f64()),
            _ => Err(self.bad_arg(i, "a float")),
        }
    }

    /// Argument `i` as an optional float.
    pub fn opt_float(&self, i: usize) -> Result<Option<f64>> {
        if self.has(i) {
            self.float(i).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Argument `i` as a bool (`None` reads as `default`).
    pub fn bool_or(&self, i: usize, default: bool) -> Result<bool> {
        match self.arg(i) {
            Arg::Bool(v) => Ok(*v),
            Arg::None => Ok(default),
            Arg::Int(v) => Ok(*v != 0),
            _ => Err(self.bad_arg(i, "a bool")),
        }
    }

    /// Argument `i` as an int list (`None` reads as empty).
    pub fn int_list(&self, i: usize) -> Result<Vec<i64>> {
        match self.arg(i) {
            Arg::IntList(v) => Ok(v.clone()),
            Arg::Int(v) => Ok(vec![*v]),
            Arg::None => Ok(vec![]),
            _ => Err(self.bad_arg(i, "a list of ints")),
        }
    }

    /// Argument `i` as a bool list.
    pub fn bool_list(&self, i: usize) -> Result<Vec<bool>> {
        match self.arg(i) {
            Arg::BoolList(v) => Ok(v.clone()),
            Arg::None => Ok(vec![]),
            _ => Err(self.bad_arg(i, "a list of bools")),
        }
    }

    /// Argument `i` as an optional dtype.
    pub fn opt_dtype(&self, i: usize) -> Result<Option<DType>> {
        match self.arg(i) {
            Arg::Dtype(d) => Ok(Some(*d)),
            Arg::None => Ok(None),
            _ => Err(self.bad_arg(i, "a dtype")),
        }
    }

    /// Argument `i` as a string.
    pub fn str(&self, i: usize) -> Result<&'a str> {
        match self.arg(i) {
            Arg::Str(s) => Ok(s),
            _ => Err(self.bad_arg(i, "a string")),
        }
    }

    /// Metadata of write target `k`.
    pub fn write_meta(&self, k: usize) -> Result<&'a TensorMeta> {
        let w = self
            .call
            .writes
            .get(k)
            .ok_or_else(|| Error::Runtime(format!("{}: no write target {k}", self.name)))?;
        self.meta(w.arg, w.item)
    }

    /// Writes `value` into write target `k` (for mutations that are not returned, such as
    /// batch norm's running statistics).
    pub fn write(&mut self, k: usize, value: Value) {
        self.explicit_writes[k] = Some(value);
    }

    /// `n` random 32-bit words shaped as `shape`, from this call's slice of the device
    /// generator.
    pub fn random_bits(&mut self, shape: &[i64]) -> Value {
        let state = match &self.rng {
            Some(s) => s.clone(),
            None => {
                let s = self.new_param(ParamSource::Rng, TensorType::new(DType::U64, [2]));
                self.rng = Some(s.clone());
                s
            }
        };
        let (next, bits) = self
            .b
            .rng_bit_generator(&state, &TensorType::new(DType::U32, shape.to_vec()));
        self.rng = Some(next);
        bits
    }

    fn write_target(&mut self, k: usize, value: Value, check_cast: bool) -> Result<()> {
        let target = self.call.writes[k];
        let meta = self.meta(target.arg, target.item)?;
        if check_cast {
            check_can_cast(value.dtype(), meta.dtype)?;
        }
        let value = self.b.convert(&value, meta.dtype);
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
            (None, false) => Some(self.storage_param(slot)),
        };
        let updated = write_view(&mut self.b, current.as_ref(), &value, meta, storage)?;
        self.storage_current[slot] = Some(updated);
        Ok(())
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
    let entry = op_entry(call.op);
    let mut ctx = Ctx::new(call, entry.name);
    ctx.b = b;
    ctx.provider = provider;
    let results = (entry.rule)(&mut ctx)?;
    // Results that alias a mutated argument are written back unless the rule wrote them.
    let mut sinks = Vec::new();
    let mut fresh: Vec<Value> = Vec::new();
    let mut results = results.into_iter();
    let implicit_writes = call.returns.is_empty() && !call.writes.is_empty();
    if implicit_writes {
        for (k, r) in results.by_ref().take(call.writes.len()).enumerate() {
            if let Some(v) = r {
                ctx.explicit_writes[k].get_or_insert(v);
            }
        }
    }
    for spec in &call.returns {
        match *spec {
            ReturnSpec::Alias(k) => {
                let r = results.next().flatten();
                if let Some(v) = r {
                    ctx.explicit_writes[k].get_or_insert(v);
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
    for k in 0..call.writes.len() {
        if let Some(v) = ctx.explicit_writes[k].take() {
            ctx.write_target(k, v, entry.check_cast)?;
        }
    }

    let mut outputs = Vec::new();
    let mut out_values = Vec::new();
    for v in fresh {
        outputs.push(OutputSpec::Fresh(v.ty.clone()));
        let flat = ctx.b.reshape(&v, &[v.ty.numel()])?;
        out_values.push(flat);
    }
    for (slot, cur) in ctx.storage_current.iter().enumerate() {
        if let Some(v) = cur {
            outputs.push(OutputSpec::Storage(slot));
            out_values.push(v.clone());
        }
    }
    for (k, rep) in ctx.replaced.iter().enumerate() {
        if let Some(v) = rep {
            outputs.push(OutputSpec::Replace(k, v.ty.clone()));
            let flat = ctx.b.reshape(v, &[v.ty.numel()])?;
            out_values.push(flat);
        }
    }
    let Ctx { b, params, .. } = ctx;
    Ok((
        b,
        LoweredOp {
            params,
            outputs,
            results: sinks,
            values: out_values,
        },
    ))
}
