//! Contractions: `stablehlo.dot_general` and `stablehlo.convolution`, which may produce a
//! wider dtype than their operands (half inputs, float32 accumulation).

use crate::builder::{i64_array, list, Builder, Value};
use crate::ops::padding_attr;
use crate::types::{DType, TensorType};
use crate::{invalid, Result};

/// Layout and window of `stablehlo.convolution` (spatial dims only; NCHW / OIHW layouts).
#[derive(Clone, Debug)]
pub struct ConvDims {
    /// Window strides per spatial dimension.
    pub strides: Vec<i64>,
    /// (low, high) padding per spatial dimension.
    pub padding: Vec<(i64, i64)>,
    /// Input (lhs) dilation per spatial dimension (>1 for transposed convolution).
    pub lhs_dilation: Vec<i64>,
    /// Kernel (rhs) dilation per spatial dimension.
    pub rhs_dilation: Vec<i64>,
    /// Number of groups.
    pub feature_group_count: i64,
    /// Batch group count (used by weight gradients).
    pub batch_group_count: i64,
}

impl Builder {
    /// General dot product. Result dims: batch dims, then lhs free dims, then rhs free dims.
    pub fn dot_general(
        &mut self,
        lhs: &Value,
        rhs: &Value,
        batch: (&[i64], &[i64]),
        contract: (&[i64], &[i64]),
    ) -> Result<Value> {
        self.dot_general_to(lhs, rhs, batch, contract, lhs.dtype())
    }

    /// [`Builder::dot_general`] with a result of dtype `out`: half operands with a float32
    /// result accumulate in float32 on the matrix units, with no widened copy of the operands.
    pub fn dot_general_to(
        &mut self,
        lhs: &Value,
        rhs: &Value,
        batch: (&[i64], &[i64]),
        contract: (&[i64], &[i64]),
        out: DType,
    ) -> Result<Value> {
        if lhs.dtype() != rhs.dtype() {
            return invalid("stablehlo.dot_general", "operand dtypes differ");
        }
        for (l, r) in batch
            .0
            .iter()
            .zip(batch.1)
            .chain(contract.0.iter().zip(contract.1))
        {
            if lhs.shape()[*l as usize] != rhs.shape()[*r as usize] {
                return invalid(
                    "stablehlo.dot_general",
                    format!("dimension mismatch: {} and {}", lhs.ty, rhs.ty),
                );
            }
        }
        let mut shape: Vec<i64> = batch.0.iter().map(|&d| lhs.shape()[d as usize]).collect();
        for (side, v) in [(0, lhs), (1, rhs)] {
            let (b, c) = if side == 0 {
                (batch.0, contract.0)
            } else {
                (batch.1, contract.1)
            };
            for i in 0..v.rank() as i64 {
                if !b.contains(&i) && !c.contains(&i) {
                    shape.push(v.shape()[i as usize]);
                }
            }
        }
        let attrs = format!(
            "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = {}, rhs_batching_dimensions = {}, lhs_contracting_dimensions = {}, rhs_contracting_dimensions = {}>",
            list(batch.0),
            list(batch.1),
            list(contract.0),
            list(contract.1)
        ) + &self.precision_attr(lhs.dtype());
        Ok(self.emit1(
            "stablehlo.dot_general",
            &[lhs, rhs],
            &attrs,
            TensorType::new(out, shape),
        ))
    }

    /// N-d convolution with NC[spatial] input, OI[spatial] kernel and NC[spatial] output of
    /// dtype `out` (float32 accumulates half operands, as in [`Builder::dot_general_to`]).
    pub fn convolution(
        &mut self,
        input: &Value,
        kernel: &Value,
        dims: &ConvDims,
        out: DType,
    ) -> Result<Value> {
        let nsp = input.rank() - 2;
        if kernel.rank() != input.rank() || dims.strides.len() != nsp {
            return invalid("stablehlo.convolution", "rank mismatch");
        }
        let names = ["0", "1", "2"];
        let sp = names[..nsp].join(", ");
        let layout = format!("[b, f, {sp}]x[o, i, {sp}]->[b, f, {sp}]");
        let mut shape = vec![input.shape()[0] / dims.batch_group_count, kernel.shape()[0]];
        for i in 0..nsp {
            let x = (input.shape()[i + 2] - 1) * dims.lhs_dilation[i] + 1;
            let x = x + dims.padding[i].0 + dims.padding[i].1;
            let k = (kernel.shape()[i + 2] - 1) * dims.rhs_dilation[i] + 1;
            if x < k {
                return invalid("stablehlo.convolution", "kernel larger than padded input");
            }
            shape.push((x - k) / dims.strides[i] + 1);
        }
        let attrs = format!(
            "dimension_numbers = #stablehlo.conv<{layout}>, window_strides = {}, padding = {}, lhs_dilation = {}, rhs_dilation = {}, feature_group_count = {} : i64, batch_group_count = {} : i64",
            i64_array(&dims.strides),
            padding_attr(&dims.padding),
            i64_array(&dims.lhs_dilation),
            i64_array(&dims.rhs_dilation),
            dims.feature_group_count,
            dims.batch_group_count
        ) + &self.precision_attr(input.dtype());
        Ok(self.emit1(
            "stablehlo.convolution",
            &[input, kernel],
            &attrs,
            TensorType::new(out, shape),
        ))
    }
}
