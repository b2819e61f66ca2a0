//! The rule API: what a lowering rule sees of one op call. Arguments are typed descriptions
//! (tensor types, numbers, lists); a rule asks for a tensor's value and gets a `Value` in the
//! program being built, without knowing whether it came from a strided view of an eager
//! storage (`eager.rs`) or from an earlier node of a graph (`graph.rs`). The driver that
//! built the context decides where values come from ([`Inputs`]) and where results go.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use crate::checks::{self, Check, CheckKind, HostRange};
use crate::dtype::Participation;
use crate::error::{Error, Result};

/// The type of a tensor argument, as a rule sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorArg {
    /// Element type.
    pub dtype: DType,
    /// Sizes.
    pub sizes: Vec<i64>,
}

impl TensorArg {
    /// The logical tensor type.
    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype, self.sizes.clone())
    }

    /// Number of elements.
    pub fn numel(&self) -> i64 {
        self.sizes.iter().product()
    }
}

/// A number known when the program is built: a `Scalar` argument or a 0-d CPU tensor.
#[derive(Clone, Copy, Debug)]
pub struct ScalarMeta {
    /// Element type (F64 / I64 / Bool for Python numbers).
    pub dtype: DType,
    /// True for Python numbers (`Scalar` args and wrapped-number tensors).
    pub wrapped: bool,
    /// The value (drivers may pass it at run time instead of baking it in).
    pub value: Literal,
}

/// One argument of an op call. `T` describes tensors: [`TensorArg`] for rules, a strided
/// view of a storage for the eager driver.
#[derive(Clone, Debug)]
pub enum Arg<T = TensorArg> {
    /// `None` or an undefined tensor.
    None,
    /// A device tensor.
    Tensor(T),
    /// A host number (Scalar or 0-d CPU tensor).
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
    List(Vec<Arg<T>>),
}

impl<T> Arg<T> {
    /// The same argument with tensors described by `f`.
    pub fn map_tensors<U>(&self, f: &impl Fn(&T) -> U) -> Arg<U> {
        match self {
            Arg::None => Arg::None,
            Arg::Tensor(t) => Arg::Tensor(f(t)),
            Arg::Scalar(s) => Arg::Scalar(*s),
            Arg::Int(v) => Arg::Int(*v),
            Arg::Float(v) => Arg::Float(*v),
            Arg::Bool(v) => Arg::Bool(*v),
            Arg::Str(v) => Arg::Str(v.clone()),
            Arg::Dtype(v) => Arg::Dtype(*v),
            Arg::IntList(v) => Arg::IntList(v.clone()),
            Arg::FloatList(v) => Arg::FloatList(v.clone()),
            Arg::BoolList(v) => Arg::BoolList(v.clone()),
            Arg::List(items) => Arg::List(items.iter().map(|a| a.map_tensors(f)).collect()),
        }
    }

    /// Argument `item` of a list, or the argument itself when `item` is `None`.
    pub fn item(&self, item: Option<usize>) -> &Arg<T> {
        match (self, item) {
            (_, None) => self,
            (Arg::List(l), Some(j)) => l.get(j).unwrap_or(&Arg::None),
            _ => &Arg::None,
        }
    }
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

/// A rule result: `None` stands for an undefined tensor.
pub type Out = Option<Value>;

/// Where a driver's input values come from.
pub trait Inputs {
    /// The value of tensor argument `arg` (list item `item`).
    fn tensor(&mut self, b: &mut Builder, arg: usize, item: Option<usize>) -> Result<Value>;
    /// The 0-d value of the host number at `arg` / `item`.
    fn scalar(&mut self, b: &mut Builder, arg: usize, item: Option<usize>, s: &ScalarMeta)
        -> Value;
    /// The generator state (`u64[2]`) this call's random numbers start from.
    fn rng_state(&mut self, b: &mut Builder) -> Value;
    /// Whether tensor argument `arg` has a contiguous layout, for the few ops whose results
    /// PyTorch's autograd formulas expect to depend on it. Drivers that do not track
    /// layouts say contiguous.
    fn is_contiguous(&self, _arg: usize) -> bool {
        true
    }
}

/// What a rule leaves behind besides its results.
pub(crate) struct Finished {
    pub b: Builder,
    pub written: Vec<Option<Value>>,
    pub rng: Option<Value>,
    pub checks: Vec<(Value, Check)>,
}

/// The context a lowering rule builds in.
pub struct Ctx<'a> {
    /// The program builder.
    pub b: Builder,
    /// The op's full name, e.g. `add_.Tensor`.
    pub name: &'static str,
    args: &'a [Arg],
    writes: &'a [WriteTarget],
    default_float: DType,
    inputs: &'a mut dyn Inputs,
    scalars: Vec<((usize, Option<usize>), Value)>,
    /// The values read from tensor arguments (for checks the host can evaluate).
    read: Vec<(Value, (usize, Option<usize>))>,
    /// Values the rule wrote into write targets that are not returned (`Ctx::write`).
    pub(crate) written: Vec<Option<Value>>,
    /// The generator state after this call's random numbers, once any were drawn.
    pub(crate) rng: Option<Value>,
    /// Device-side checks the rule asked for (`Ctx::check_range`).
    pub(crate) checks: Vec<(Value, Check)>,
    /// Whether host numbers (`Scalar` arguments) are part of the program's cache key, so
    /// that a rule may read their values; otherwise they are program inputs.
    scalars_known: bool,
}

impl<'a> Ctx<'a> {
    /// A context over `args` whose values `inputs` supplies.
    pub(crate) fn new(
        b: Builder,
        name: &'static str,
        args: &'a [Arg],
        writes: &'a [WriteTarget],
        default_float: DType,
        inputs: &'a mut dyn Inputs,
    ) -> Self {
        Ctx {
            b,
            name,
            args,
            writes,
            default_float,
            inputs,
            scalars: Vec::new(),
            read: Vec::new(),
            written: vec![None; writes.len()],
            rng: None,
            checks: Vec::new(),
            scalars_known: true,
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
        self.args.len()
    }

    /// Argument `i` (`Arg::None` past the end).
    pub fn arg(&self, i: usize) -> &'a Arg {
        self.args.get(i).unwrap_or(&Arg::None)
    }

    /// `torch.get_default_dtype()`.
    pub fn default_float(&self) -> DType {
        self.default_float
    }

    /// The mutated tensors of this call.
    pub fn writes(&self) -> &'a [WriteTarget] {
        self.writes
    }

    /// Type of the tensor argument `i` (or of list item `item`).
    pub fn meta(&self, i: usize, item: Option<usize>) -> Result<&'a TensorArg> {
        match self.arg(i).item(item) {
            Arg::Tensor(m) => Ok(m),
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

    /// Whether tensor argument `i` is laid out contiguously (see [`Inputs::is_contiguous`]).
    pub fn is_contiguous(&self, i: usize) -> bool {
        self.inputs.is_contiguous(i)
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

    /// The value of argument `i`: a tensor, or a host number as a 0-d value.
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
        match self.arg(i).item(item) {
            Arg::Scalar(s) if s.wrapped => Participation::Wrapped,
            Arg::Scalar(_) => Participation::ZeroDim,
            Arg::Tensor(m) if m.sizes.is_empty() => Participation::ZeroDim,
            _ => Participation::Dim,
        }
    }

    fn value_of(&mut self, i: usize, item: Option<usize>) -> Result<Value> {
        match self.arg(i).item(item) {
            Arg::Tensor(_) => {
                let v = self.inputs.tensor(&mut self.b, i, item)?;
                self.read.push((v.clone(), (i, item)));
                Ok(v)
            }
            Arg::Scalar(s) => {
                if let Some((_, v)) = self.scalars.iter().find(|(k, _)| *k == (i, item)) {
                    return Ok(v.clone());
                }
                let v = self.inputs.scalar(&mut self.b, i, item, s);
                self.scalars.push(((i, item), v.clone()));
                Ok(v)
            }
            _ => Err(self.bad_arg(i, "a tensor")),
        }
    }

    /// Marks `Scalar` arguments as program inputs whose values a rule must not read (the
    /// eager driver, for entries that do not bake scalars into the cache key).
    pub(crate) fn with_scalars_as_inputs(mut self, as_inputs: bool) -> Self {
        self.scalars_known = !as_inputs;
        self
    }

    /// The value of `Scalar` argument `i`: only known to entries that bake scalars, else
    /// a program compiled for one value would be reused for another.
    fn known_scalar(&self, i: usize, s: &ScalarMeta) -> Result<Literal> {
        if self.scalars_known {
            return Ok(s.value);
        }
        Err(Error::Runtime(format!(
            "tpurs internal error: {} reads Scalar argument {i} but its entry does not bake scalars",
            self.name
        )))
    }

    /// A host number baked into the program (only for ops registered with baked scalars).
    pub fn scalar_value(&self, i: usize) -> Result<Literal> {
        match self.arg(i) {
            Arg::Scalar(s) => self.known_scalar(i, s),
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
            Arg::Scalar(s) => {
                let v = self.known_scalar(i, s)?;
                if v.imag() != 0.0 {
                    return Err(Error::Uncovered(format!(
                        "{}: a complex number where a real one is read",
                        self.name
                    )));
                }
                Ok(v.as_f64())
            }
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

    /// Type of write target `k`.
    pub fn write_meta(&self, k: usize) -> Result<&'a TensorArg> {
        let w = self
            .writes
            .get(k)
            .ok_or_else(|| Error::Runtime(format!("{}: no write target {k}", self.name)))?;
        self.meta(w.arg, w.item)
    }

    /// Writes `value` into write target `k` (for mutations that are not returned, such as
    /// batch norm's running statistics).
    pub fn write(&mut self, k: usize, value: Value) {
        self.written[k] = Some(value);
    }

    /// `n` random 32-bit words shaped as `shape`, from this call's slice of the device
    /// generator.
    pub fn random_bits(&mut self, shape: &[i64]) -> Value {
        let state = match self.rng.take() {
            Some(s) => s,
            None => self.inputs.rng_state(&mut self.b),
        };
        let (next, bits) = self
            .b
            .rng_bit_generator(&state, &TensorType::new(DType::U32, shape.to_vec()));
        self.rng = Some(next);
        bits
    }

    /// Raises `message` (an exception of `kind`, `{}` standing for the offending element) at
    /// the next host wait when an element of `idx` lies outside `lo..hi`: checked on the
    /// device, inside this program (see `checks`), or at the op by the host when it knows
    /// the elements.
    pub fn check_range(
        &mut self,
        idx: &Value,
        lo: i64,
        hi: i64,
        kind: CheckKind,
        message: impl Into<String>,
    ) -> Result<()> {
        self.push_range(idx, (lo, hi), None, kind, message.into(), false)
    }

    /// [`Ctx::check_range`] that lets `ignore` through too (a loss's `ignore_index`).
    pub fn check_range_ignoring(
        &mut self,
        idx: &Value,
        (lo, hi): (i64, i64),
        ignore: i64,
        kind: CheckKind,
        message: impl Into<String>,
    ) -> Result<()> {
        self.push_range(idx, (lo, hi), Some(ignore), kind, message.into(), false)
    }

    /// [`Ctx::check_range`] read at the op itself: for the conditions PyTorch waits for on
    /// every device, so code expects the error from the call.
    pub fn check_range_at_op(
        &mut self,
        idx: &Value,
        lo: i64,
        hi: i64,
        kind: CheckKind,
        message: impl Into<String>,
    ) -> Result<()> {
        self.push_range(idx, (lo, hi), None, kind, message.into(), true)
    }

    fn push_range(
        &mut self,
        idx: &Value,
        (lo, hi): (i64, i64),
        ignore: Option<i64>,
        kind: CheckKind,
        message: String,
        at_op: bool,
    ) -> Result<()> {
        if !checks::enabled() {
            return Ok(());
        }
        let host = self
            .read
            .iter()
            .find(|(v, _)| v.is(idx))
            .map(|&(_, (arg, item))| HostRange {
                arg,
                item,
                lo,
                hi,
                ignore,
            });
        let checked = match ignore {
            Some(ignore) => {
                let idx = self.b.convert(idx, DType::I64);
                let skip = self.b.full_like(&idx, Literal::Int(ignore));
                let kept = self.b.compare(CompareDir::Ne, &idx, &skip)?;
                let low = self.b.full_like(&idx, Literal::Int(lo));
                self.b.select(&kept, &idx, &low)?
            }
            None => idx.clone(),
        };
        if let Some(v) = checks::out_of_range(&mut self.b, &checked, lo, hi)? {
            self.checks.push((
                v,
                Check {
                    kind,
                    message,
                    at_op,
                    host,
                },
            ));
        }
        Ok(())
    }

    /// Raises `message` (an exception of `kind`) at the op, after the checks before it:
    /// for an error CPU PyTorch raises only once a data-dependent check has passed.
    /// False when checks are off (the caller raises at once instead).
    pub fn fail_at_op(&mut self, kind: CheckKind, message: &str) -> Result<bool> {
        if !checks::enabled() {
            return Ok(false);
        }
        let no = self.b.constant(Literal::Bool(false), DType::Bool);
        self.push_holds(&no, kind, message, true)?;
        Ok(true)
    }

    /// Raises `message` (an exception of `kind`) at the next host wait unless the 0-d
    /// predicate `ok` holds: checked on the device, inside this program.
    pub fn check_that(&mut self, ok: &Value, kind: CheckKind, message: &str) -> Result<()> {
        self.push_holds(ok, kind, message, false)
    }

    fn push_holds(
        &mut self,
        ok: &Value,
        kind: CheckKind,
        message: &str,
        at_op: bool,
    ) -> Result<()> {
        if checks::enabled() {
            let v = checks::holds(&mut self.b, ok)?;
            let message = message.to_string();
            self.checks.push((
                v,
                Check {
                    kind,
                    message,
                    at_op,
                    host: None,
                },
            ));
        }
        Ok(())
    }

    /// Raises `message` (an exception of `kind`) at the next host wait unless every element
    /// of the boolean `pred` is true: checked on the device, inside this program.
    pub fn check_all(&mut self, pred: &Value, kind: CheckKind, message: &str) -> Result<()> {
        self.push_all(pred, kind, message, false)
    }

    /// [`Ctx::check_all`] read at the op itself: for the conditions PyTorch waits for on
    /// every device, so code expects the error from the call.
    pub fn check_all_at_op(&mut self, pred: &Value, kind: CheckKind, message: &str) -> Result<()> {
        self.push_all(pred, kind, message, true)
    }

    fn push_all(
        &mut self,
        pred: &Value,
        kind: CheckKind,
        message: &str,
        at_op: bool,
    ) -> Result<()> {
        if !checks::enabled() {
            return Ok(());
        }
        let flat = self.b.reshape(pred, &[pred.ty.numel()])?;
        let all = self.b.constant(Literal::Bool(true), DType::Bool);
        let ok = self.b.reduce(&flat, &all, &[0], |b, x, y| {
            b.and(x, y).expect("same types")
        });
        self.push_holds(&ok, kind, message, at_op)
    }

    /// Ends the rule: the builder, the values written with [`Ctx::write`], the final
    /// generator state and the device-side checks.
    pub(crate) fn finish(self) -> Finished {
        Finished {
            b: self.b,
            written: self.written,
            rng: self.rng,
            checks: self.checks,
        }
    }

    /// The driver's inputs (for a graph lowered inside this call).
    pub(crate) fn inputs(&mut self) -> &mut dyn Inputs {
        &mut *self.inputs
    }

    /// Continues the generator state of an earlier call of the same program.
    pub(crate) fn with_rng(mut self, rng: Option<Value>) -> Self {
        self.rng = rng;
        self
    }
}
