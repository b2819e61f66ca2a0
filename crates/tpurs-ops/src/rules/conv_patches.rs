//! Convolutions lowered as one dot over gathered kernel taps ("im2col") where XLA's own
//! CPU convolution is slow: a kernel about as large as the input, or fewer output positions
//! than taps. ResNet-18's last stage (3x3 kernels over 2x2 or 1x1 maps) ran 50-100x slower
//! than CPU PyTorch through `stablehlo.convolution`; as dots it runs 3-20x faster than that.

use tpurs_hlo::{Builder, ConvDims, DType, Literal, Value};

use crate::error::Result;

/// Largest number of kernel taps gathered; beyond it the patches outgrow the input.
const MAX_TAPS: i64 = 64;

/// `stablehlo.convolution` semantics (NC[spatial] input, OI[spatial] kernel, result dtype
/// `acc`): a dot over patches where [`prefers_patches`], else the plugin's convolution.
/// `stored_kernel` says `w` is a tensor in its stored (O, I, *k) layout rather than one
/// derived in the program (the flipped kernel of an input gradient).
pub(super) fn convolution(
    b: &mut Builder,
    x: &Value,
    w: &Value,
    dims: &ConvDims,
    acc: DType,
    stored_kernel: bool,
) -> Result<Value> {
    if !prefers_patches(x.shape(), &w.shape()[2..], dims) {
        return Ok(b.convolution(x, w, dims, acc)?);
    }
    let g = dims.feature_group_count;
    let (n, c, o) = (x.shape()[0], x.shape()[1], w.shape()[0]);
    let k = &w.shape()[2..];
    let out: Vec<i64> = (0..k.len())
        .map(|i| out_extent(x.shape(), k, dims, i))
        .collect();
    let (p, live) = patches(b, x, k, dims, &out)?;
    let grouped: Vec<i64> = [n, g, c / g, live.len() as i64]
        .iter()
        .chain(&out)
        .copied()
        .collect();
    let p = b.reshape(&p, &grouped)?;
    let taps: i64 = w.shape()[2..].iter().product();
    let k = b.reshape(w, &[g, o / g, c / g, taps])?;
    let k = live_taps(b, &k, &live)?;
    let nsp = out.len() as i64;
    let rows = n * out.iter().product::<i64>();
    // XLA's CPU dot runs up to 3x faster with a stored kernel on the left when its free
    // size is the larger; a derived kernel is laid out to suit the dot, patches first.
    let y = if stored_kernel && o / g >= rows {
        // (g, O/g, N, *out) -> (N, g, O/g, *out)
        let y = b.dot_general_to(&k, &p, (&[0], &[1]), (&[2, 3], &[2, 3]), acc)?;
        let perm: Vec<i64> = [2, 0, 1].into_iter().chain(3..3 + nsp).collect();
        b.transpose(&y, &perm)?
    } else {
        // (g, N, *out, O/g) -> (N, g, O/g, *out)
        let y = b.dot_general_to(&p, &k, (&[1], &[0]), (&[2, 3], &[2, 3]), acc)?;
        let perm: Vec<i64> = [1, 0, 2 + nsp].into_iter().chain(2..2 + nsp).collect();
        b.transpose(&y, &perm)?
    };
    let shape: Vec<i64> = [n, o].iter().chain(&out).copied().collect();
    Ok(b.reshape(&y, &shape)?)
}

/// The gradient of the convolution of `x` by a kernel of spatial size `k` under `dims`
/// (no lhs dilation, no batch groups) with respect to the kernel, given `gy` (N, O, *out),
/// where [`prefers_patches`]: (O, C/g, *k) as a dot of `gy` with the patches of `x`.
pub(super) fn weight_grad(
    b: &mut Builder,
    x: &Value,
    gy: &Value,
    k: &[i64],
    dims: &ConvDims,
    acc: DType,
) -> Result<Value> {
    let g = dims.feature_group_count;
    let (n, c, o) = (x.shape()[0], x.shape()[1], gy.shape()[1]);
    let out = gy.shape()[2..].to_vec();
    // A transposed convolution's output padding can leave rows past the last window.
    let (p, live) = patches(b, x, k, dims, &out)?;
    let grouped =
        |a: i64, b: i64| -> Vec<i64> { [n, g, a, b].iter().chain(&out).copied().collect() };
    let p = b.reshape(&p, &grouped(c / g, live.len() as i64))?;
    let gy_shape: Vec<i64> = [n, g, o / g].iter().chain(&out).copied().collect();
    let gy = b.reshape(gy, &gy_shape)?;
    // Contract the batch and the output positions: (g, O/g, C/g, live).
    let nsp = out.len() as i64;
    let gy_contract: Vec<i64> = [0].into_iter().chain(3..3 + nsp).collect();
    let p_contract: Vec<i64> = [0].into_iter().chain(4..4 + nsp).collect();
    let gw = b.dot_general_to(&gy, &p, (&[1], &[1]), (&gy_contract, &p_contract), acc)?;
    let taps: i64 = k.iter().product();
    let gw = scatter_taps(b, &gw, &live, taps)?;
    let shape: Vec<i64> = [o, c / g].iter().chain(k).copied().collect();
    Ok(b.reshape(&gw, &shape)?)
}

/// Spatial size of the input after lhs dilation and padding.
fn padded_extent(x: &[i64], dims: &ConvDims, i: usize) -> i64 {
    let (lo, hi) = dims.padding[i];
    (x[i + 2] - 1) * dims.lhs_dilation[i] + 1 + lo + hi
}

/// Output size along spatial dim `i`.
fn out_extent(x: &[i64], k: &[i64], dims: &ConvDims, i: usize) -> i64 {
    let window = (k[i] - 1) * dims.rhs_dilation[i] + 1;
    (padded_extent(x, dims, i) - window) / dims.strides[i] + 1
}

/// Patches pay off (measured on ResNet-18's shapes) where the input is no larger than the
/// kernel in every spatial dim, or there are no more output positions than taps.
pub(super) fn prefers_patches(x: &[i64], k: &[i64], dims: &ConvDims) -> bool {
    let nsp = x.len() - 2;
    let taps: i64 = k.iter().product();
    let positions: i64 = (0..nsp).map(|i| out_extent(x, k, dims, i)).product();
    dims.batch_group_count == 1
        && taps <= MAX_TAPS
        && ((0..nsp).all(|i| x[i + 2] <= k[i]) || positions <= taps)
}

/// Gathers `x` (N, C, *) into (N, C, live, *out) for the first `out` output positions:
/// for each kernel tap that reaches the
/// input (taps that read only padding add zeros and are dropped), the elements it
/// multiplies at every output position. Returns the patches and the live taps' row-major
/// positions in the kernel.
fn patches(
    b: &mut Builder,
    x: &Value,
    k: &[i64],
    dims: &ConvDims,
    out: &[i64],
) -> Result<(Value, Vec<i64>)> {
    let nsp = x.rank() - 2;
    let zero = b.constant(Literal::Int(0), x.dtype());
    let mut low = vec![0; x.rank()];
    let mut high = vec![0; x.rank()];
    let mut interior = vec![0; x.rank()];
    for i in 0..nsp {
        (low[i + 2], high[i + 2]) = dims.padding[i];
        interior[i + 2] = dims.lhs_dilation[i] - 1;
    }
    let xp = b.pad(x, &zero, &low, &high, &interior)?;
    let mut one_tap: Vec<i64> = x.shape()[..2].to_vec();
    one_tap.push(1);
    one_tap.extend(out);
    let mut strides = vec![1; x.rank()];
    strides[2..].copy_from_slice(&dims.strides);
    let taps: i64 = k.iter().product();
    let (mut slices, mut live) = (Vec::new(), Vec::new());
    for t in 0..taps {
        let mut rest = t;
        let mut start = vec![0; x.rank()];
        for i in (0..nsp).rev() {
            start[i + 2] = (rest % k[i]) * dims.rhs_dilation[i];
            rest /= k[i];
        }
        if !(0..nsp).all(|i| reaches_input(x.shape()[i + 2], dims, i, start[i + 2], out[i])) {
            continue;
        }
        let mut limit = xp.shape().to_vec();
        for i in 0..nsp {
            limit[i + 2] = start[i + 2] + (out[i] - 1) * dims.strides[i] + 1;
        }
        let s = b.slice(&xp, &start, &limit, &strides)?;
        slices.push(b.reshape(&s, &one_tap)?);
        live.push(t);
    }
    if slices.is_empty() {
        // Every tap reads padding: one zero tap keeps the dot well-formed.
        slices.push(b.broadcast_in_dim(&zero, &one_tap, &[])?);
        live.push(0);
    }
    let refs: Vec<&Value> = slices.iter().collect();
    Ok((b.concatenate(&refs, 2)?, live))
}

/// Whether a tap starting at padded position `start` of spatial dim `i` reads any element
/// of the input's `extent` (before lhs dilation) at one of its `out` positions.
fn reaches_input(extent: i64, dims: &ConvDims, i: usize, start: i64, out: i64) -> bool {
    let lo = dims.padding[i].0;
    let ld = dims.lhs_dilation[i];
    (0..out).any(|o| {
        let q = start + o * dims.strides[i] - lo;
        q >= 0 && q % ld == 0 && q / ld < extent
    })
}

/// The kernel (g, O/g, C/g, taps) restricted to the `live` taps.
fn live_taps(b: &mut Builder, k: &Value, live: &[i64]) -> Result<Value> {
    if live.len() as i64 == k.shape()[3] {
        return Ok(k.clone());
    }
    let parts = live
        .iter()
        .map(|&t| b.slice_dim(k, 3, t, t + 1, 1))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let refs: Vec<&Value> = parts.iter().collect();
    Ok(b.concatenate(&refs, 3)?)
}

/// Expands (g, O/g, C/g, live) to (g, O/g, C/g, taps) with zeros for the dropped taps.
fn scatter_taps(b: &mut Builder, gw: &Value, live: &[i64], taps: i64) -> Result<Value> {
    if live.len() as i64 == taps {
        return Ok(gw.clone());
    }
    let mut one = gw.shape().to_vec();
    one[3] = 1;
    let z = b.constant(Literal::Int(0), gw.dtype());
    let zero = b.broadcast_in_dim(&z, &one, &[])?;
    let parts = (0..taps)
        .map(|t| match live.iter().position(|&l| l == t) {
            Some(j) => b.slice_dim(gw, 3, j as i64, j as i64 + 1, 1),
            None => Ok(zero.clone()),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let refs: Vec<&Value> = parts.iter().collect();
    Ok(b.concatenate(&refs, 3)?)
}
