//! Range checks the host answers itself: when an index tensor's bytes are known (it was
//! just copied from the CPU, as `x[[1, 2]]` and `x[torch.tensor([1, 2]).to("tpu")]` do),
//! an index out of range raises at the op, before its program runs, as on CPU, instead
//! of at the next host wait.

use tpurs_hlo::DType;
use tpurs_ops::checks::HostRange;
use tpurs_ops::OutputSpec;

use crate::abi::{CArg, TensorRef};
use crate::cache::Plan;
use crate::error::Result;
use crate::launch::{dtype_of, source_arg};
use crate::storage::Contents;

/// Raises the first of `plan`'s checks whose tensor the host knows to hold an element
/// outside the allowed range.
pub(crate) fn raise_known_failures(plan: &Plan, args: &[CArg]) -> Result<()> {
    for spec in &plan.lowered.outputs {
        let OutputSpec::Check(check) = spec else {
            continue;
        };
        let Some(range) = check.host else {
            continue;
        };
        let CArg::Tensor(t) = source_arg(args, range.arg, range.item)? else {
            continue;
        };
        if let Some(value) = first_outside(t, &range)? {
            return Err(check.error(value).into());
        }
    }
    Ok(())
}

/// The first element of `t` (in logical order) outside `range`, when the host knows them.
fn first_outside(t: &TensorRef, range: &HostRange) -> Result<Option<i64>> {
    let Contents::Ready(flat) = t.storage.contents() else {
        return Ok(None);
    };
    let Some(bytes) = flat.known.as_deref() else {
        return Ok(None);
    };
    let dtype = dtype_of(t.dtype)?;
    if flat.dtype != dtype || t.sizes.contains(&0) {
        return Ok(None);
    }
    let mut at = vec![0i64; t.sizes.len()];
    loop {
        let pos = t.offset + at.iter().zip(t.strides).map(|(i, s)| i * s).sum::<i64>();
        let Some(v) = element(bytes, dtype, pos) else {
            return Ok(None);
        };
        if (v < range.lo || v >= range.hi) && range.ignore != Some(v) {
            return Ok(Some(v));
        }
        // The next position in row-major order.
        let mut d = at.len();
        loop {
            if d == 0 {
                return Ok(None);
            }
            d -= 1;
            at[d] += 1;
            if at[d] < t.sizes[d] {
                break;
            }
            at[d] = 0;
        }
    }
}

/// Element `pos` of little-endian integer `bytes` of `dtype`, as the device's `i64`
/// conversion reads it.
fn element(bytes: &[u8], dtype: DType, pos: i64) -> Option<i64> {
    let size = dtype.byte_size();
    let start = usize::try_from(pos).ok()? * size;
    let raw = bytes.get(start..start + size)?;
    let mut wide = [0u8; 8];
    wide[..size].copy_from_slice(raw);
    let unsigned = u64::from_le_bytes(wide);
    Some(if dtype.is_unsigned() || dtype == DType::Bool {
        unsigned as i64
    } else {
        // Sign-extend from `size` bytes.
        let shift = 64 - 8 * size as u32;
        ((unsigned << shift) as i64) >> shift
    })
}

#[cfg(test)]
mod tests {
    use super::element;
    use tpurs_hlo::DType;

    #[test]
    fn elements_read_as_the_device_converts_them() {
        let bytes: Vec<u8> = [-3i16, 7, i16::MIN]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let read: Vec<_> = (0..4).map(|i| element(&bytes, DType::I16, i)).collect();
        assert_eq!(read, [Some(-3), Some(7), Some(-32768), None]);
        assert_eq!(element(&[0xff], DType::U8, 0), Some(255));
        assert_eq!(element(&[0xff], DType::I8, 0), Some(-1));
        assert_eq!(element(&(-9i64).to_le_bytes(), DType::I64, 0), Some(-9));
        assert_eq!(element(&[1], DType::Bool, 0), Some(1));
        assert_eq!(element(&[1], DType::I8, -1), None);
    }
}
