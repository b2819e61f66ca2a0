//! StableHLO ops, one method each, with the result type inferred from the operands.
//!
//! Methods check the constraints a lowering rule is likely to get wrong (ranks, matching
//! shapes) and leave the rest to the plugin's verifier, whose errors also come back as `Err`.

use crate::builder::{i64_array, list, Builder, Value};
use crate::types::{DType, Literal, TensorType};
use crate::{invalid, Result};

/// Comparison direction of `stablehlo.compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareDir {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// Dimension numbers of `stablehlo.gather`.
#[derive(Clone, Debug, Default)]
pub struct GatherDims {
    /// Dimensions of the result that are slice (offset) dimensions.
    pub offset_dims: Vec<i64>,
    /// Operand dimensions whose slice size is 1 and that are dropped.
    pub collapsed_slice_dims: Vec<i64>,
    /// Operand dimension each index component addresses.
    pub start_index_map: Vec<i64>,
    /// Dimension of the indices that holds the index vector.
    pub index_vector_dim: i64,
    /// Slice size per operand dimension.
    pub slice_sizes: Vec<i64>,
}

/// Dimension numbers of `stablehlo.scatter`.
#[derive(Clone, Debug, Default)]
pub struct ScatterDims {
    /// Dimensions of the update that are window dimensions.
    pub update_window_dims: Vec<i64>,
    /// Operand dimensions with window size 1 that updates do not carry.
    pub inserted_window_dims: Vec<i64>,
    /// Operand dimension each index component addresses.
    pub scatter_dims_to_operand_dims: Vec<i64>,
    /// Dimension of the indices that holds the index vector.
    pub index_vector_dim: i64,
}

macro_rules! unary_ops {
    ($($(#[$doc:meta])* $fn:ident => $op:literal),* $(,)?) => {
        impl Builder {
            $($(#[$doc])* pub fn $fn(&mut self, x: &Value) -> Value {
                self.emit1($op, &[x], "", x.ty.clone())
            })*
        }
    };
}

macro_rules! binary_ops {
    ($($(#[$doc:meta])* $fn:ident => $op:literal),* $(,)?) => {
        impl Builder {
            $($(#[$doc])* pub fn $fn(&mut self, a: &Value, b: &Value) -> Result<Value> {
                same_type($op, a, b)?;
                Ok(self.emit1($op, &[a, b], "", a.ty.clone()))
            })*
        }
    };
}

impl Builder {
    /// `|x|`; an unsigned value is its own magnitude (StableHLO's `abs` refuses unsigned types),
    /// a complex one's is real.
    pub fn abs(&mut self, x: &Value) -> Value {
        if x.dtype().is_unsigned() {
            return x.clone();
        }
        if x.dtype().is_complex() {
            return self.magnitude(x);
        }
        self.emit1("stablehlo.abs", &[x], "", x.ty.clone())
    }

    /// sign (-1, 0, 1); for an unsigned value 0 or 1 (StableHLO's `sign` refuses unsigned types).
    pub fn sign(&mut self, x: &Value) -> Value {
        if !x.dtype().is_unsigned() {
            return self.emit1("stablehlo.sign", &[x], "", x.ty.clone());
        }
        let zero = self.full_like(x, Literal::Int(0));
        let nonzero = self
            .compare(CompareDir::Ne, x, &zero)
            .expect("operands of one type");
        self.convert(&nonzero, x.dtype())
    }
}

unary_ops! {
    /// `-x`
    neg => "stablehlo.negate",
    /// `e^x`
    exp => "stablehlo.exponential",
    /// `e^x - 1`
    expm1 => "stablehlo.exponential_minus_one",
    /// natural log
    log => "stablehlo.log",
    /// `log(1 + x)`
    log1p => "stablehlo.log_plus_one",
    /// square root
    sqrt => "stablehlo.sqrt",
    /// `1 / sqrt(x)`
    rsqrt => "stablehlo.rsqrt",
    /// cube root
    cbrt => "stablehlo.cbrt",
    /// hyperbolic tangent
    tanh => "stablehlo.tanh",
    /// `1 / (1 + e^-x)`
    logistic => "stablehlo.logistic",
    /// sine
    sin => "stablehlo.sine",
    /// cosine
    cos => "stablehlo.cosine",
    /// tangent
    tan => "stablehlo.tan",
    /// round down
    floor => "stablehlo.floor",
    /// round up
    ceil => "stablehlo.ceil",
    /// round half to even
    round_even => "stablehlo.round_nearest_even",
    /// logical / bitwise not
    not => "stablehlo.not",
}

binary_ops! {
    /// `a + b`
    add => "stablehlo.add",
    /// `a - b`
    sub => "stablehlo.subtract",
    /// `a * b`
    mul => "stablehlo.multiply",
    /// `a / b` (truncating for integers)
    div => "stablehlo.divide",
    /// remainder with the sign of the dividend
    rem => "stablehlo.remainder",
    /// `a ^ b`
    pow => "stablehlo.power",
    /// elementwise maximum (NaN-propagating)
    max => "stablehlo.maximum",
    /// elementwise minimum (NaN-propagating)
    min => "stablehlo.minimum",
    /// logical / bitwise and
    and => "stablehlo.and",
    /// logical / bitwise or
    or => "stablehlo.or",
    /// logical / bitwise xor
    xor => "stablehlo.xor",
    /// `atan2(a, b)`
    atan2 => "stablehlo.atan2",
    /// `a << b`
    shift_left => "stablehlo.shift_left",
    /// arithmetic `a >> b`
    shift_right_arithmetic => "stablehlo.shift_right_arithmetic",
    /// logical `a >> b`
    shift_right_logical => "stablehlo.shift_right_logical",
}

fn same_type(op: &'static str, a: &Value, b: &Value) -> Result<()> {
    if a.ty != b.ty {
        return invalid(op, format!("operand types differ: {} vs {}", a.ty, b.ty));
    }
    // StableHLO leaves complex `remainder` undefined, and XLA's CPU compiler crashes on it
    // instead of refusing it.
    if a.dtype().is_complex() && op == "stablehlo.remainder" {
        return invalid(op, format!("complex operands: {}", a.ty));
    }
    Ok(())
}

impl Builder {
    /// `is_finite(x)` as a boolean tensor.
    pub fn is_finite(&mut self, x: &Value) -> Value {
        self.emit1(
            "stablehlo.is_finite",
            &[x],
            "",
            x.ty.with_dtype(DType::Bool),
        )
    }

    /// Elementwise comparison giving a boolean tensor.
    pub fn compare(&mut self, dir: CompareDir, a: &Value, b: &Value) -> Result<Value> {
        same_type("stablehlo.compare", a, b)?;
        let d = match dir {
            CompareDir::Eq => "EQ",
            CompareDir::Ne => "NE",
            CompareDir::Lt => "LT",
            CompareDir::Le => "LE",
            CompareDir::Gt => "GT",
            CompareDir::Ge => "GE",
        };
        let attrs = format!(
            "comparison_direction = #stablehlo<comparison_direction {d}>, compare_type = #stablehlo<comparison_type {}>",
            a.dtype().compare_type()
        );
        Ok(self.emit1(
            "stablehlo.compare",
            &[a, b],
            &attrs,
            a.ty.with_dtype(DType::Bool),
        ))
    }

    /// `pred ? on_true : on_false`, elementwise.
    pub fn select(&mut self, pred: &Value, on_true: &Value, on_false: &Value) -> Result<Value> {
        same_type("stablehlo.select", on_true, on_false)?;
        if pred.dtype() != DType::Bool || (pred.rank() != 0 && pred.shape() != on_true.shape()) {
            return invalid("stablehlo.select", format!("bad predicate {}", pred.ty));
        }
        Ok(self.emit1(
            "stablehlo.select",
            &[pred, on_true, on_false],
            "",
            on_true.ty.clone(),
        ))
    }

    /// `min(max(x, lo), hi)`; `lo` and `hi` are 0-d or of x's shape.
    pub fn clamp(&mut self, lo: &Value, x: &Value, hi: &Value) -> Value {
        self.emit1("stablehlo.clamp", &[lo, x, hi], "", x.ty.clone())
    }

    /// Converts elements to another type (identity when the types already match). A
    /// complex32 result has its parts rounded to half precision.
    pub fn convert(&mut self, x: &Value, dtype: DType) -> Value {
        if x.dtype() == dtype {
            return x.clone();
        }
        if let Some(same) = x.spelled_as(dtype).filter(|_| dtype != DType::C32) {
            return same;
        }
        if dtype == DType::F8E4M3FN && x.dtype().is_float() && !x.dtype().is_float8() {
            // torch's casts to e4m3fn saturate at its largest finite value; XLA's give NaN.
            let max = self.full_like(x, Literal::Float(448.0));
            let min = self.full_like(x, Literal::Float(-448.0));
            let clamped = self.clamp(&min, x, &max);
            return self.emit1("stablehlo.convert", &[&clamped], "", x.ty.with_dtype(dtype));
        }
        let computed = dtype.computed_as();
        let y = match x.spelled_as(computed) {
            Some(y) => y,
            None => self.emit1("stablehlo.convert", &[x], "", x.ty.with_dtype(computed)),
        };
        match y.spelled_as(dtype) {
            Some(z) if computed != dtype => self.round_complex32(&z),
            _ => y,
        }
    }

    /// Reinterprets the bits of each element as another type of the same width.
    pub fn bitcast_convert(&mut self, x: &Value, dtype: DType) -> Value {
        self.emit1(
            "stablehlo.bitcast_convert",
            &[x],
            "",
            x.ty.with_dtype(dtype),
        )
    }

    /// Broadcasts `x` into `shape`; operand dim `i` maps to result dim `dims[i]`.
    pub fn broadcast_in_dim(&mut self, x: &Value, shape: &[i64], dims: &[i64]) -> Result<Value> {
        if dims.len() != x.rank() {
            return invalid(
                "stablehlo.broadcast_in_dim",
                "dims must name every operand dim",
            );
        }
        for (i, &d) in dims.iter().enumerate() {
            let ok = (d as usize) < shape.len()
                && (x.shape()[i] == 1 || x.shape()[i] == shape[d as usize]);
            if !ok {
                return invalid(
                    "stablehlo.broadcast_in_dim",
                    format!("cannot broadcast {} to {:?}", x.ty, shape),
                );
            }
        }
        if x.shape() == shape {
            return Ok(x.clone());
        }
        let attrs = format!("broadcast_dimensions = {}", i64_array(dims));
        Ok(self.emit1(
            "stablehlo.broadcast_in_dim",
            &[x],
            &attrs,
            TensorType::new(x.dtype(), shape),
        ))
    }

    /// Numpy-style broadcast of `x` to `shape` (trailing dimensions aligned).
    pub fn broadcast_to(&mut self, x: &Value, shape: &[i64]) -> Result<Value> {
        if x.rank() > shape.len() {
            return invalid(
                "broadcast_to",
                format!("cannot broadcast {} to {:?}", x.ty, shape),
            );
        }
        let lead = (shape.len() - x.rank()) as i64;
        let dims: Vec<i64> = (0..x.rank() as i64).map(|i| i + lead).collect();
        self.broadcast_in_dim(x, shape, &dims)
    }

    /// Reshapes to `shape` (same number of elements).
    pub fn reshape(&mut self, x: &Value, shape: &[i64]) -> Result<Value> {
        if x.ty.numel() != shape.iter().product::<i64>() {
            return invalid(
                "stablehlo.reshape",
                format!("cannot reshape {} to {:?}", x.ty, shape),
            );
        }
        if x.shape() == shape {
            return Ok(x.clone());
        }
        Ok(self.emit1(
            "stablehlo.reshape",
            &[x],
            "",
            TensorType::new(x.dtype(), shape),
        ))
    }

    /// Permutes dimensions: result dim `i` is operand dim `perm[i]`.
    pub fn transpose(&mut self, x: &Value, perm: &[i64]) -> Result<Value> {
        if perm.len() != x.rank() {
            return invalid("stablehlo.transpose", "permutation rank mismatch");
        }
        if perm.iter().enumerate().all(|(i, &p)| i as i64 == p) {
            return Ok(x.clone());
        }
        let shape: Vec<i64> = perm.iter().map(|&p| x.shape()[p as usize]).collect();
        let attrs = format!("permutation = {}", i64_array(perm));
        Ok(self.emit1(
            "stablehlo.transpose",
            &[x],
            &attrs,
            TensorType::new(x.dtype(), shape),
        ))
    }

    /// Static strided slice `[start, limit)` with `strides` per dimension.
    pub fn slice(
        &mut self,
        x: &Value,
        start: &[i64],
        limit: &[i64],
        strides: &[i64],
    ) -> Result<Value> {
        if start.len() != x.rank() || limit.len() != x.rank() || strides.len() != x.rank() {
            return invalid("stablehlo.slice", "index rank mismatch");
        }
        let mut shape = Vec::with_capacity(x.rank());
        for i in 0..x.rank() {
            if start[i] < 0 || limit[i] > x.shape()[i] || start[i] > limit[i] || strides[i] < 1 {
                return invalid(
                    "stablehlo.slice",
                    format!("bad slice {start:?}..{limit:?} of {}", x.ty),
                );
            }
            shape.push((limit[i] - start[i] + strides[i] - 1) / strides[i]);
        }
        if shape == x.shape() {
            return Ok(x.clone());
        }
        let attrs = format!(
            "start_indices = {}, limit_indices = {}, strides = {}",
            i64_array(start),
            i64_array(limit),
            i64_array(strides)
        );
        Ok(self.emit1(
            "stablehlo.slice",
            &[x],
            &attrs,
            TensorType::new(x.dtype(), shape),
        ))
    }

    /// Slice of `x` along one dimension.
    pub fn slice_dim(
        &mut self,
        x: &Value,
        dim: usize,
        start: i64,
        limit: i64,
        stride: i64,
    ) -> Result<Value> {
        let mut s = vec![0; x.rank()];
        let mut l = x.shape().to_vec();
        let mut st = vec![1; x.rank()];
        s[dim] = start;
        l[dim] = limit;
        st[dim] = stride;
        self.slice(x, &s, &l, &st)
    }

    /// Concatenates along `dim`.
    pub fn concatenate(&mut self, xs: &[&Value], dim: usize) -> Result<Value> {
        let Some(first) = xs.first() else {
            return invalid("stablehlo.concatenate", "no operands");
        };
        if xs.len() == 1 {
            return Ok((*first).clone());
        }
        let mut shape = first.shape().to_vec();
        shape[dim] = 0;
        for x in xs {
            let ok = x.rank() == first.rank()
                && x.dtype() == first.dtype()
                && (0..x.rank()).all(|i| i == dim || x.shape()[i] == first.shape()[i]);
            if !ok {
                return invalid("stablehlo.concatenate", format!("{} vs {}", first.ty, x.ty));
            }
            shape[dim] += x.shape()[dim];
        }
        let attrs = format!("dimension = {dim} : i64");
        Ok(self.emit1(
            "stablehlo.concatenate",
            xs,
            &attrs,
            TensorType::new(first.dtype(), shape),
        ))
    }

    /// Pads with `value` (0-d): `low`/`high` edge padding (may be negative) and interior padding.
    pub fn pad(
        &mut self,
        x: &Value,
        value: &Value,
        low: &[i64],
        high: &[i64],
        interior: &[i64],
    ) -> Result<Value> {
        let shape: Vec<i64> = (0..x.rank())
            .map(|i| {
                let n = x.shape()[i];
                low[i] + high[i] + n + (n - 1).max(0) * interior[i]
            })
            .collect();
        if shape.iter().any(|&d| d < 0) {
            return invalid("stablehlo.pad", format!("negative result shape {shape:?}"));
        }
        let attrs = format!(
            "edge_padding_low = {}, edge_padding_high = {}, interior_padding = {}",
            i64_array(low),
            i64_array(high),
            i64_array(interior)
        );
        Ok(self.emit1(
            "stablehlo.pad",
            &[x, value],
            &attrs,
            TensorType::new(x.dtype(), shape),
        ))
    }

    /// Reverses the order of elements along `dims`.
    pub fn reverse(&mut self, x: &Value, dims: &[i64]) -> Value {
        if dims.is_empty() {
            return x.clone();
        }
        let attrs = format!("dimensions = {}", i64_array(dims));
        self.emit1("stablehlo.reverse", &[x], &attrs, x.ty.clone())
    }

    /// `x` unchanged but opaque to XLA's simplifier, which otherwise folds `(x + c) - c`
    /// back into `x` where the rounding of `x + c` is the point.
    pub fn barrier(&mut self, x: &Value) -> Value {
        self.emit1("stablehlo.optimization_barrier", &[x], "", x.ty.clone())
    }

    /// Indices 0, 1, ... along `dim` of a tensor of type `ty`.
    pub fn iota(&mut self, ty: &TensorType, dim: usize) -> Value {
        let attrs = format!("iota_dimension = {dim} : i64");
        self.emit1("stablehlo.iota", &[], &attrs, ty.clone())
    }

    /// Slice of static size `sizes` starting at runtime 0-d indices `starts` (clamped in range).
    pub fn dynamic_slice(&mut self, x: &Value, starts: &[Value], sizes: &[i64]) -> Value {
        let mut operands = vec![x];
        operands.extend(starts.iter());
        let attrs = format!("slice_sizes = {}", i64_array(sizes));
        self.emit1(
            "stablehlo.dynamic_slice",
            &operands,
            &attrs,
            TensorType::new(x.dtype(), sizes),
        )
    }

    /// Writes `update` into `x` at runtime 0-d indices `starts` (clamped in range).
    pub fn dynamic_update_slice(&mut self, x: &Value, update: &Value, starts: &[Value]) -> Value {
        let mut operands = vec![x, update];
        operands.extend(starts.iter());
        self.emit1(
            "stablehlo.dynamic_update_slice",
            &operands,
            "",
            x.ty.clone(),
        )
    }

    /// `stablehlo.gather` with explicit dimension numbers; `shape` is the result shape.
    pub fn gather(
        &mut self,
        x: &Value,
        indices: &Value,
        dims: &GatherDims,
        shape: &[i64],
    ) -> Value {
        // Reading from an empty dimension: nothing valid to read (the callers' index checks
        // report any index), and a slice of size 1 from it does not verify.
        let empty_source = x
            .shape()
            .iter()
            .zip(&dims.slice_sizes)
            .any(|(&n, &s)| s > n);
        if empty_source {
            return self.splat(Literal::Int(0), &TensorType::new(x.dtype(), shape));
        }
        let attrs = format!(
            "dimension_numbers = #stablehlo.gather<offset_dims = {}, collapsed_slice_dims = {}, start_index_map = {}, index_vector_dim = {}>, slice_sizes = {}, indices_are_sorted = false",
            list(&dims.offset_dims),
            list(&dims.collapsed_slice_dims),
            list(&dims.start_index_map),
            dims.index_vector_dim,
            i64_array(&dims.slice_sizes)
        );
        self.emit1(
            "stablehlo.gather",
            &[x, indices],
            &attrs,
            TensorType::new(x.dtype(), shape),
        )
    }

    /// `stablehlo.scatter`; `combine` builds the update computation from (old, new) 0-d values.
    /// With `combine = None` the new value replaces the old one.
    pub fn scatter(
        &mut self,
        x: &Value,
        indices: &Value,
        updates: &Value,
        dims: &ScatterDims,
        combine: Option<fn(&mut Builder, &Value, &Value) -> Value>,
    ) -> Value {
        let scalar = TensorType::scalar(x.dtype());
        let region = self.region(&[scalar.clone(), scalar], |b, args| match combine {
            Some(f) => vec![f(b, &args[0], &args[1])],
            None => vec![args[1].clone()],
        });
        let attrs = format!(
            "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = {}, inserted_window_dims = {}, scatter_dims_to_operand_dims = {}, index_vector_dim = {}>, indices_are_sorted = false, unique_indices = false",
            list(&dims.update_window_dims),
            list(&dims.inserted_window_dims),
            list(&dims.scatter_dims_to_operand_dims),
            dims.index_vector_dim
        );
        self.emit(
            "stablehlo.scatter",
            &[x, indices, updates],
            &attrs,
            &[region],
            std::slice::from_ref(&x.ty),
        )
        .remove(0)
    }

    /// Reduces `x` over `dims` starting from `init` (a 0-d constant) with `combine`.
    pub fn reduce(
        &mut self,
        x: &Value,
        init: &Value,
        dims: &[i64],
        combine: fn(&mut Builder, &Value, &Value) -> Value,
    ) -> Value {
        let scalar = TensorType::scalar(x.dtype());
        let region = self.region(&[scalar.clone(), scalar], |b, args| {
            vec![combine(b, &args[0], &args[1])]
        });
        let shape: Vec<i64> = (0..x.rank())
            .filter(|i| !dims.contains(&(*i as i64)))
            .map(|i| x.shape()[i])
            .collect();
        let attrs = format!("dimensions = {}", i64_array(dims));
        self.emit(
            "stablehlo.reduce",
            &[x, init],
            &attrs,
            &[region],
            &[TensorType::new(x.dtype(), shape)],
        )
        .remove(0)
    }

    /// A variadic reduce over several operands of one shape (e.g. value + index for argmax).
    /// `combine` receives the accumulators then the new elements and returns new accumulators.
    pub fn reduce_multi(
        &mut self,
        xs: &[&Value],
        inits: &[&Value],
        dims: &[i64],
        combine: impl FnOnce(&mut Builder, &[Value], &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let n = xs.len();
        let mut arg_tys: Vec<TensorType> =
            xs.iter().map(|x| TensorType::scalar(x.dtype())).collect();
        arg_tys.extend(arg_tys.clone());
        let region = self.region(&arg_tys, |b, args| combine(b, &args[..n], &args[n..]));
        let keep: Vec<i64> = (0..xs[0].rank())
            .filter(|i| !dims.contains(&(*i as i64)))
            .map(|i| xs[0].shape()[i])
            .collect();
        let result_tys: Vec<TensorType> = xs
            .iter()
            .map(|x| TensorType::new(x.dtype(), keep.clone()))
            .collect();
        let mut operands: Vec<&Value> = xs.to_vec();
        operands.extend_from_slice(inits);
        let attrs = format!("dimensions = {}", i64_array(dims));
        self.emit(
            "stablehlo.reduce",
            &operands,
            &attrs,
            &[region],
            &result_tys,
        )
    }

    /// Sliding-window reduction (pooling).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_window(
        &mut self,
        x: &Value,
        init: &Value,
        window: &[i64],
        strides: &[i64],
        base_dilations: &[i64],
        padding: &[(i64, i64)],
        combine: fn(&mut Builder, &Value, &Value) -> Value,
    ) -> Value {
        let scalar = TensorType::scalar(x.dtype());
        let region = self.region(&[scalar.clone(), scalar], |b, args| {
            vec![combine(b, &args[0], &args[1])]
        });
        let shape: Vec<i64> = (0..x.rank())
            .map(|i| {
                let dilated = (x.shape()[i] - 1) * base_dilations[i] + 1;
                let padded = dilated + padding[i].0 + padding[i].1;
                if padded < window[i] {
                    0
                } else {
                    (padded - window[i]) / strides[i] + 1
                }
            })
            .collect();
        let attrs = format!(
            "window_dimensions = {}, window_strides = {}, base_dilations = {}, padding = {}",
            i64_array(window),
            i64_array(strides),
            i64_array(base_dilations),
            padding_attr(padding)
        );
        self.emit(
            "stablehlo.reduce_window",
            &[x, init],
            &attrs,
            &[region],
            &[TensorType::new(x.dtype(), shape)],
        )
        .remove(0)
    }

    /// Random bits from a counter-based generator: returns (new state, bits of type `ty`).
    pub fn rng_bit_generator(&mut self, state: &Value, ty: &TensorType) -> (Value, Value) {
        let attrs = "rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>";
        let mut r = self.emit(
            "stablehlo.rng_bit_generator",
            &[state],
            attrs,
            &[],
            &[state.ty.clone(), ty.clone()],
        );
        let bits = r.remove(1);
        (r.remove(0), bits)
    }

    /// Sorts `xs` (same shape) along `dim`, ordered by `less(a_i.., b_i..)` on the elements.
    pub fn sort(
        &mut self,
        xs: &[&Value],
        dim: usize,
        less: impl FnOnce(&mut Builder, &[Value]) -> Value,
    ) -> Vec<Value> {
        let mut arg_tys = Vec::new();
        for x in xs {
            arg_tys.push(TensorType::scalar(x.dtype()));
            arg_tys.push(TensorType::scalar(x.dtype()));
        }
        let region = self.region(&arg_tys, |b, args| vec![less(b, args)]);
        let attrs = format!("dimension = {dim} : i64, is_stable = true");
        let tys: Vec<TensorType> = xs.iter().map(|x| x.ty.clone()).collect();
        self.emit("stablehlo.sort", xs, &attrs, &[region], &tys)
    }

    /// A 0-d constant of `x`'s element type.
    pub fn scalar_like(&mut self, x: &Value, value: Literal) -> Value {
        self.constant(value, x.dtype())
    }

    /// A constant of `x`'s type with every element equal to `value`.
    pub fn full_like(&mut self, x: &Value, value: Literal) -> Value {
        let c = self.constant(value, x.dtype());
        self.broadcast_in_dim(&c, &x.ty.shape.clone(), &[])
            .expect("0-d broadcasts to any shape")
    }

    /// Variadic sliding-window reduction with window dilation (pooling with indices).
    /// `combine` receives the accumulators then the new elements and returns new accumulators.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_window_multi(
        &mut self,
        xs: &[&Value],
        inits: &[&Value],
        window: &[i64],
        strides: &[i64],
        window_dilations: &[i64],
        padding: &[(i64, i64)],
        combine: impl FnOnce(&mut Builder, &[Value], &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let n = xs.len();
        let mut arg_tys: Vec<TensorType> =
            xs.iter().map(|x| TensorType::scalar(x.dtype())).collect();
        arg_tys.extend(arg_tys.clone());
        let region = self.region(&arg_tys, |b, args| combine(b, &args[..n], &args[n..]));
        let x0 = xs[0];
        let shape: Vec<i64> = (0..x0.rank())
            .map(|i| {
                let padded = x0.shape()[i] + padding[i].0 + padding[i].1;
                let w = (window[i] - 1) * window_dilations[i] + 1;
                if padded < w {
                    0
                } else {
                    (padded - w) / strides[i] + 1
                }
            })
            .collect();
        let tys: Vec<TensorType> = xs
            .iter()
            .map(|x| TensorType::new(x.dtype(), shape.clone()))
            .collect();
        let attrs = format!(
            "window_dimensions = {}, window_strides = {}, window_dilations = {}, padding = {}",
            i64_array(window),
            i64_array(strides),
            i64_array(window_dilations),
            padding_attr(padding)
        );
        let mut operands: Vec<&Value> = xs.to_vec();
        operands.extend_from_slice(inits);
        self.emit(
            "stablehlo.reduce_window",
            &operands,
            &attrs,
            &[region],
            &tys,
        )
    }
}

pub(crate) fn padding_attr(padding: &[(i64, i64)]) -> String {
    let rows: Vec<String> = padding.iter().map(|(l, h)| format!("[{l}, {h}]")).collect();
    format!(
        "dense<[{}]> : tensor<{}x2xi64>",
        rows.join(", "),
        padding.len()
    )
}
