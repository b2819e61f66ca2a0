//! The program builder: SSA values, op emission in MLIR's generic syntax, regions.

use std::fmt::Write;

use crate::types::{DType, Literal, TensorType};

/// An SSA value of the program being built, with its tensor type.
#[derive(Clone, Debug)]
pub struct Value {
    pub(crate) name: String,
    /// The value's type.
    pub ty: TensorType,
}

impl Value {
    /// Element type of the value.
    pub fn dtype(&self) -> DType {
        self.ty.dtype
    }

    /// The same value seen as `dtype`, when both types have one MLIR spelling (complex32
    /// and complex64 values are both `complex<f32>`).
    pub fn spelled_as(&self, dtype: DType) -> Option<Value> {
        (self.dtype().mlir() == dtype.mlir()).then(|| Value {
            name: self.name.clone(),
            ty: self.ty.with_dtype(dtype),
        })
    }

    /// Shape of the value.
    pub fn shape(&self) -> &[i64] {
        &self.ty.shape
    }

    /// Rank of the value.
    pub fn rank(&self) -> usize {
        self.ty.shape.len()
    }

    /// True when `other` is this very value (same SSA name and type), not an equal one.
    pub fn is(&self, other: &Value) -> bool {
        self.name == other.name && self.ty == other.ty
    }
}

/// How precisely float32 dots and convolutions are computed: StableHLO's precision config,
/// as PyTorch's `torch.set_float32_matmul_precision` ("highest", "high", "medium") asks.
/// Plugins without faster modes (the CPU) compute every one in full float32; a TPU runs
/// `Default` as one bfloat16 pass and `Highest` as full float32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// The plugin's fastest (`"medium"`).
    Default,
    /// Close to float32 (`"high"`).
    High,
    /// Full float32 (`"highest"`, PyTorch's default).
    #[default]
    Highest,
}

impl Precision {
    /// The StableHLO name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Default => "DEFAULT",
            Precision::High => "HIGH",
            Precision::Highest => "HIGHEST",
        }
    }
}

/// Builds one `func.func @main` and prints it as a StableHLO module.
#[derive(Default)]
pub struct Builder {
    body: String,
    next_id: u32,
    params: Vec<TensorType>,
    /// `(param, output)`: the output may reuse the parameter's buffer when it is donated.
    aliases: Vec<(usize, usize)>,
    depth: usize,
    precision: Precision,
    /// Functions `call` added beside `@main`: `(name, definition)`.
    functions: Vec<(String, String)>,
}

impl Builder {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the precision of the float32 dots and convolutions emitted from now on.
    pub fn set_precision(&mut self, precision: Precision) {
        self.precision = precision;
    }

    /// The `precision_config` attribute for a dot or convolution over `dtype` (none where
    /// the operands are not float32).
    pub(crate) fn precision_attr(&self, dtype: DType) -> String {
        if dtype != DType::F32 {
            return String::new();
        }
        let p = format!("#stablehlo<precision {}>", self.precision.name());
        format!(", precision_config = [{p}, {p}]")
    }

    /// Adds a program parameter of the given type.
    pub fn param(&mut self, ty: TensorType) -> Value {
        let name = format!("%arg{}", self.params.len());
        self.params.push(ty.clone());
        Value { name, ty }
    }

    /// Lets output `output` of `finish` take parameter `param`'s buffer when the caller
    /// donates it (`tf.aliasing_output`); the two must have the same type.
    pub fn alias_output(&mut self, param: usize, output: usize) {
        self.aliases.push((param, output));
    }

    /// Number of parameters added so far.
    pub fn num_params(&self) -> usize {
        self.params.len()
    }

    fn fresh_name(&mut self) -> String {
        self.next_id += 1;
        format!("%v{}", self.next_id)
    }

    /// Emits one op in generic syntax and returns its results.
    pub fn emit(
        &mut self,
        op: &str,
        operands: &[&Value],
        attrs: &str,
        regions: &[String],
        result_tys: &[TensorType],
    ) -> Vec<Value> {
        let name = self.fresh_name();
        let line = &mut self.body;
        for _ in 0..=self.depth {
            line.push_str("  ");
        }
        match result_tys.len() {
            0 => {}
            1 => write!(line, "{name} = ").unwrap(),
            n => write!(line, "{name}:{n} = ").unwrap(),
        }
        write!(line, "\"{op}\"(").unwrap();
        join(line, operands.iter().map(|v| v.name.as_str()));
        line.push(')');
        if !regions.is_empty() {
            line.push_str(" (");
            join(line, regions.iter().map(String::as_str));
            line.push(')');
        }
        if !attrs.is_empty() {
            write!(line, " {{{attrs}}}").unwrap();
        }
        line.push_str(" : (");
        let operand_tys: Vec<String> = operands.iter().map(|v| v.ty.to_string()).collect();
        join(line, operand_tys.iter().map(String::as_str));
        line.push_str(") -> ");
        let result_strs: Vec<String> = result_tys.iter().map(|t| t.to_string()).collect();
        if result_tys.len() == 1 {
            line.push_str(&result_strs[0]);
        } else {
            line.push('(');
            join(line, result_strs.iter().map(String::as_str));
            line.push(')');
        }
        line.push('\n');
        match result_tys.len() {
            1 => vec![Value {
                name,
                ty: result_tys[0].clone(),
            }],
            _ => result_tys
                .iter()
                .enumerate()
                .map(|(i, ty)| Value {
                    name: format!("{name}#{i}"),
                    ty: ty.clone(),
                })
                .collect(),
        }
    }

    /// Emits a single-result op.
    pub fn emit1(&mut self, op: &str, operands: &[&Value], attrs: &str, ty: TensorType) -> Value {
        self.emit(op, operands, attrs, &[], &[ty]).remove(0)
    }

    /// Builds a region with block arguments of the given types; `body` returns the values
    /// passed to `stablehlo.return`.
    pub fn region(
        &mut self,
        arg_tys: &[TensorType],
        body: impl FnOnce(&mut Builder, &[Value]) -> Vec<Value>,
    ) -> String {
        let outer = std::mem::take(&mut self.body);
        self.depth += 1;
        let args: Vec<Value> = arg_tys
            .iter()
            .map(|ty| Value {
                name: self.fresh_name(),
                ty: ty.clone(),
            })
            .collect();
        let results = body(self, &args);
        let refs: Vec<&Value> = results.iter().collect();
        self.emit("stablehlo.return", &refs, "", &[], &[]);
        self.depth -= 1;
        let inner = std::mem::replace(&mut self.body, outer);
        let mut text = String::from("{\n");
        for _ in 0..=self.depth {
            text.push_str("  ");
        }
        text.push_str("^bb0(");
        let decls: Vec<String> = args
            .iter()
            .map(|a| format!("{}: {}", a.name, a.ty))
            .collect();
        join(&mut text, decls.iter().map(String::as_str));
        text.push_str("):\n");
        text.push_str(&inner);
        for _ in 0..=self.depth {
            text.push_str("  ");
        }
        text.push('}');
        text
    }

    /// A 0-d constant.
    pub fn constant(&mut self, value: Literal, dtype: DType) -> Value {
        let attrs = format!(
            "value = dense<{}> : tensor<{}>",
            value.mlir(dtype),
            dtype.mlir()
        );
        self.emit1("stablehlo.constant", &[], &attrs, TensorType::scalar(dtype))
    }

    /// A constant of the given shape with every element equal to `value`.
    pub fn splat(&mut self, value: Literal, ty: &TensorType) -> Value {
        let attrs = format!("value = dense<{}> : {}", value.mlir(ty.dtype), ty);
        self.emit1("stablehlo.constant", &[], &attrs, ty.clone())
    }

    /// Calls the function `callee`, defined by `definition` (whole `func.func` text, a private
    /// function), added to the module once however often it is called.
    pub fn call(
        &mut self,
        callee: &str,
        definition: &str,
        operands: &[&Value],
        result_tys: &[TensorType],
    ) -> Vec<Value> {
        if !self.functions.iter().any(|(name, _)| name == callee) {
            self.functions.push((callee.into(), definition.into()));
        }
        let attrs = format!("callee = @{callee}");
        self.emit("func.call", operands, &attrs, &[], result_tys)
    }

    /// A 1-d constant holding `values` (a table computed on the host).
    pub fn vector(&mut self, values: &[Literal], dtype: DType) -> Value {
        let ty = TensorType::new(dtype, vec![values.len() as i64]);
        let items: Vec<String> = values.iter().map(|v| v.mlir(dtype)).collect();
        let attrs = format!("value = dense<[{}]> : {}", items.join(", "), ty);
        self.emit1("stablehlo.constant", &[], &attrs, ty)
    }

    /// Prints the module; `outputs` are the values `@main` returns, in order.
    pub fn finish(mut self, outputs: &[Value]) -> String {
        let refs: Vec<&Value> = outputs.iter().collect();
        let tys: Vec<TensorType> = Vec::new();
        self.emit("func.return", &refs, "", &[], &tys);
        let mut text = String::from("module @tpurs {\n  func.func public @main(");
        let params: Vec<String> = self
            .params
            .iter()
            .enumerate()
            .map(|(i, t)| match self.aliases.iter().find(|(p, _)| *p == i) {
                Some((_, out)) => format!("%arg{i}: {t} {{tf.aliasing_output = {out} : i32}}"),
                None => format!("%arg{i}: {t}"),
            })
            .collect();
        join(&mut text, params.iter().map(String::as_str));
        text.push_str(") -> (");
        let outs: Vec<String> = outputs.iter().map(|v| v.ty.to_string()).collect();
        join(&mut text, outs.iter().map(String::as_str));
        text.push_str(") {\n");
        text.push_str(&self.body);
        text.push_str("  }\n");
        for (_, definition) in &self.functions {
            text.push_str(definition);
            text.push('\n');
        }
        text.push_str("}\n");
        text
    }
}

fn join<'a>(out: &mut String, items: impl Iterator<Item = &'a str>) {
    for (i, s) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(s);
    }
}

/// Formats `array<i64: ...>`.
pub(crate) fn i64_array(values: &[i64]) -> String {
    let mut s = String::from("array<i64");
    for (i, v) in values.iter().enumerate() {
        s.push_str(if i == 0 { ": " } else { ", " });
        write!(s, "{v}").unwrap();
    }
    s.push('>');
    s
}

/// Formats `[a, b, c]` as used inside dimension-number attributes.
pub(crate) fn list(values: &[i64]) -> String {
    let items: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    format!("[{}]", items.join(", "))
}
