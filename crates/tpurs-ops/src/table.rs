//! The lowering table: every supported ATen op name and its rule, built once.
//!
//! Rule families register themselves in `rules::register_all`; the bridge registers a kernel
//! for exactly the names listed here and sends everything else to the CPU fallback.

use std::collections::HashMap;
use std::sync::OnceLock;

use tpurs_hlo::DType;

use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::Result;

/// A lowering rule: reads its arguments from the context, returns the schema's results.
pub type Rule = fn(&mut Ctx) -> Result<Vec<Out>>;

/// Index of an op in the table.
pub type OpId = u32;

/// Which dtypes a result may be written into.
#[derive(Clone, Copy)]
pub enum OutDtype {
    /// Any the result can be cast to (`torch.can_cast`): ops that promote their inputs.
    SafeCast,
    /// Any dtype (copy semantics: fills, copies, factories).
    AnyCast,
    /// An `out=` argument must have exactly the result's dtype, as ATen's ops without type
    /// promotion require (in-place writes keep the safe-cast check); the message comes
    /// from (out dtype, result dtype).
    Same(fn(DType, DType) -> String),
    /// `abs`: [`Self::Same`] as the input's dtype, except that a complex input's real result
    /// may go into any real dtype it safely casts to.
    RealOfComplex,
}

/// TensorIterator's message for an `out=` of another dtype than its op's result.
pub(crate) fn found_dtype(out: DType, result: DType) -> String {
    format!(
        "Found dtype {} but expected {}",
        torch_name(out),
        torch_name(result)
    )
}

/// One registered op name.
pub struct OpEntry {
    /// Full ATen name, `schema_name.overload` (e.g. `add_.Tensor`, `mm`).
    pub name: &'static str,
    /// The rule.
    pub rule: Rule,
    /// Which dtypes results may be written into (mutated and `out=` arguments).
    pub out_dtype: OutDtype,
    /// Scalar arguments are compile-time constants (part of the cache key).
    pub bake_scalars: bool,
    /// Only graphs use this rule (views and factories the bridge handles itself in eager).
    pub graph_only: bool,
    /// The rule handles complex tensors and dtypes; others refuse them (the CPU fallback
    /// runs those calls) rather than lower complex values as if they were real.
    pub complex: bool,
    /// `float` arguments that are program inputs rather than part of the cache key.
    pub float_inputs: &'static [usize],
}

impl OpEntry {
    /// Whether `float` argument `i` is a program input (it reaches the rule as a `Scalar`).
    pub fn float_input(&self, i: usize) -> bool {
        self.float_inputs.contains(&i)
    }
}

/// Collects table entries; rule families call [`Registry::ops`].
#[derive(Default)]
pub struct Registry {
    entries: Vec<OpEntry>,
}

/// Options of the entries just registered.
pub struct Registered<'a> {
    entries: &'a mut [OpEntry],
}

impl Registered<'_> {
    /// Scalar arguments become compile-time constants (ops whose shapes depend on them).
    pub fn bake_scalars(self) -> Self {
        self.entries.iter_mut().for_each(|e| e.bake_scalars = true);
        self
    }

    /// Not registered with the dispatcher: only graphs reach this rule.
    pub fn graph_only(self) -> Self {
        self.entries.iter_mut().for_each(|e| e.graph_only = true);
        self
    }

    /// The rule handles complex tensors and dtypes too.
    pub fn complex(self) -> Self {
        self.entries.iter_mut().for_each(|e| e.complex = true);
        self
    }

    /// These `float` arguments become program inputs: a learning rate a scheduler changes
    /// every step must not compile a program per value.
    pub fn float_inputs(self, args: &'static [usize]) -> Self {
        self.entries.iter_mut().for_each(|e| e.float_inputs = args);
        self
    }

    /// Write results into mutated arguments with any cast (copy semantics).
    pub fn any_cast(self) -> Self {
        self.out_dtype(OutDtype::AnyCast)
    }

    /// An `out=` argument must have the result's dtype, with TensorIterator's message.
    pub fn same_dtype_out(self) -> Self {
        self.out_dtype(OutDtype::Same(found_dtype))
    }

    /// [`Self::same_dtype_out`] with the op's own message from (out dtype, result dtype).
    pub fn same_dtype_out_as(self, message: fn(DType, DType) -> String) -> Self {
        self.out_dtype(OutDtype::Same(message))
    }

    /// See [`OutDtype::RealOfComplex`].
    pub fn real_of_complex_out(self) -> Self {
        self.out_dtype(OutDtype::RealOfComplex)
    }

    fn out_dtype(self, policy: OutDtype) -> Self {
        self.entries.iter_mut().for_each(|e| e.out_dtype = policy);
        self
    }
}

impl Registry {
    /// Registers `rule` under each name.
    pub fn ops(&mut self, names: &[&'static str], rule: Rule) -> Registered<'_> {
        let start = self.entries.len();
        for &name in names {
            self.entries.push(OpEntry {
                name,
                rule,
                out_dtype: OutDtype::SafeCast,
                bake_scalars: false,
                graph_only: false,
                complex: false,
                float_inputs: &[],
            });
        }
        Registered {
            entries: &mut self.entries[start..],
        }
    }
}

struct Table {
    entries: Vec<OpEntry>,
    by_name: HashMap<&'static str, OpId>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut reg = Registry::default();
        crate::rules::register_all(&mut reg);
        let mut by_name = HashMap::new();
        for (i, e) in reg.entries.iter().enumerate() {
            let previous = by_name.insert(e.name, i as OpId);
            assert!(previous.is_none(), "op {} registered twice", e.name);
        }
        Table {
            entries: reg.entries,
            by_name,
        }
    })
}

/// The id of a full op name, if a rule covers it.
pub fn lookup(name: &str) -> Option<OpId> {
    table().by_name.get(name).copied()
}

/// The entry of an id returned by [`lookup`].
pub fn op_entry(id: OpId) -> &'static OpEntry {
    &table().entries[id as usize]
}

/// Every registered name, in table order.
pub fn op_names() -> impl Iterator<Item = &'static str> {
    table().entries.iter().map(|e| e.name)
}
