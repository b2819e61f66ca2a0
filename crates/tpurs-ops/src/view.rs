//! Reading and writing strided views of a flat storage buffer inside a program.
//!
//! Every storage is one flat PJRT buffer; a tensor is (sizes, strides, offset) over it.
//! Views that are a box of a dense layout (contiguous, transposed, sliced with steps,
//! selected, broadcast) lower to slice / reshape / transpose / broadcast; anything else
//! (overlapping windows, arbitrary `as_strided`) to a gather or scatter of computed indices.

use tpurs_hlo::{Builder, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use crate::eager::{StorageMeta, TensorMeta};
use crate::error::{Error, Result};

/// True when the view is dense and row-major (size-1 dims ignored).
pub fn is_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    let mut expected = 1;
    for (&n, &s) in sizes.iter().zip(strides).rev() {
        if n == 1 {
            continue;
        }
        if s != expected {
            return false;
        }
        expected *= n;
    }
    true
}

/// True when the view is contiguous and starts at element 0.
pub fn is_dense_from_zero(m: &TensorMeta) -> bool {
    m.offset == 0 && is_contiguous(&m.sizes, &m.strides)
}

/// The dims of a view that carry data (size > 1, stride > 0), sorted by stride descending,
/// when they form a box of a dense layout: `(dim, size, stride)`.
fn box_dims(m: &TensorMeta) -> Option<Vec<(usize, i64, i64)>> {
    let mut dims: Vec<(usize, i64, i64)> = (0..m.sizes.len())
        .filter(|&d| m.sizes[d] > 1 && m.strides[d] > 0)
        .map(|d| (d, m.sizes[d], m.strides[d]))
        .collect();
    dims.sort_by_key(|d| std::cmp::Reverse(d.2));
    for w in dims.windows(2) {
        let (outer, inner) = (w[0], w[1]);
        if outer.2 % inner.2 != 0 || outer.2 < inner.2 * inner.1 {
            return None;
        }
    }
    Some(dims)
}

/// Reinterprets a flat buffer as another element type (bytes unchanged; the element count
/// scales with the width ratio), as torch does for `view(dtype)` and byte-level storage copies.
pub fn reinterpret(b: &mut Builder, flat: &Value, to: DType) -> Result<Value> {
    let from = flat.dtype();
    if from == to {
        return Ok(flat.clone());
    }
    // Booleans are stored one byte each: go through u8.
    if from == DType::Bool {
        let bytes = b.convert(flat, DType::U8);
        return reinterpret(b, &bytes, to);
    }
    // Complex elements are (real, imaginary) pairs of their part type, assembled and taken
    // apart explicitly: StableHLO has no bitcast to or from complex types.
    if from.is_complex() {
        let n = flat.shape()[0];
        let re = b.real(flat);
        let im = b.imag(flat);
        let re = b.reshape(&re, &[n, 1])?;
        let im = b.reshape(&im, &[n, 1])?;
        let pairs = b.concatenate(&[&re, &im], 1)?;
        let parts = b.reshape(&pairs, &[2 * n])?;
        return reinterpret(b, &parts, to);
    }
    if to.is_complex() {
        let parts = reinterpret(b, flat, to.real_part())?;
        let n = parts.shape()[0];
        if n % 2 != 0 {
            return Err(Error::Runtime(format!(
                "a storage of {n} {:?} elements cannot be viewed as {to:?}",
                to.real_part()
            )));
        }
        let pairs = b.reshape(&parts, &[n / 2, 2])?;
        let re = b.slice(&pairs, &[0, 0], &[n / 2, 1], &[1, 1])?;
        let im = b.slice(&pairs, &[0, 1], &[n / 2, 2], &[1, 1])?;
        let re = b.reshape(&re, &[n / 2])?;
        let im = b.reshape(&im, &[n / 2])?;
        return Ok(b.complex(&re, &im)?);
    }
    if to == DType::Bool {
        let bytes = reinterpret(b, flat, DType::U8)?;
        let zero = b.full_like(&bytes, Literal::Int(0));
        return Ok(b.compare(tpurs_hlo::CompareDir::Ne, &bytes, &zero)?);
    }
    let (fw, tw) = (from.byte_size() as i64, to.byte_size() as i64);
    let n = flat.shape()[0];
    if fw == tw {
        return Ok(b.bitcast_convert(flat, to));
    }
    if fw > tw {
        let ratio = fw / tw;
        let ty = TensorType::new(to, [n, ratio]);
        let split = b.emit1("stablehlo.bitcast_convert", &[flat], "", ty);
        return Ok(b.reshape(&split, &[n * ratio])?);
    }
    let ratio = tw / fw;
    if n % ratio != 0 {
        return Err(Error::Runtime(format!(
            "a storage of {} bytes cannot be viewed as {to:?}",
            n * fw
        )));
    }
    let grouped = b.reshape(flat, &[n / ratio, ratio])?;
    Ok(b.emit1(
        "stablehlo.bitcast_convert",
        &[&grouped],
        "",
        TensorType::new(to, [n / ratio]),
    ))
}

/// Number of elements of the view's dtype the storage holds.
pub fn storage_numel_as(storage: &StorageMeta, dtype: DType) -> i64 {
    storage.numel * storage.dtype.byte_size() as i64 / dtype.byte_size() as i64
}

/// Where a view starts in its storage. Eager calls pass a nonzero offset as a program
/// parameter, so that reading `x[i]` for every `i` runs one program, not one per `i`;
/// graphs know their views' offsets when they are built.
#[derive(Clone, Debug)]
pub enum Start {
    /// An offset known when the program is built.
    Fixed(i64),
    /// A 0-d i64 value of the program.
    At(Value),
}

impl Start {
    /// The offset as a 0-d i64 value.
    fn index(&self, b: &mut Builder) -> Value {
        match self {
            Start::Fixed(i) => index(b, *i),
            Start::At(v) => v.clone(),
        }
    }
}

fn index(b: &mut Builder, i: i64) -> Value {
    b.constant(Literal::Int(i), DType::I64)
}

/// One past the last storage element the view touches, counted from its offset.
fn extent(m: &TensorMeta) -> i64 {
    1 + m
        .sizes
        .iter()
        .zip(&m.strides)
        .map(|(&n, &s)| (n - 1) * s)
        .sum::<i64>()
}

/// How many zeros past the end of the storage a box of `len` elements read from `start`
/// may need: exactly, for a fixed offset; for any offset where the view fits, otherwise.
fn overhang(m: &TensorMeta, start: &Start, total: i64, len: i64) -> i64 {
    match start {
        Start::Fixed(offset) => (offset + len - total).max(0),
        Start::At(_) => (len - extent(m)).max(0),
    }
}

/// `flat` with `n` zeros appended.
fn pad_end(b: &mut Builder, flat: &Value, n: i64) -> Result<Value> {
    if n == 0 {
        return Ok(flat.clone());
    }
    let zero = b.constant(Literal::Int(0), flat.dtype());
    Ok(b.pad(flat, &zero, &[0], &[n], &[0])?)
}

/// The segment `flat[start .. start + len]` (`flat` is long enough).
fn segment(b: &mut Builder, flat: &Value, start: &Start, len: i64) -> Result<Value> {
    Ok(match start {
        Start::Fixed(offset) => b.slice(flat, &[*offset], &[offset + len], &[1])?,
        Start::At(at) => b.dynamic_slice(flat, std::slice::from_ref(at), &[len]),
    })
}

/// Flat element indices of every element of the view, shaped `[numel, 1]`.
fn view_indices(b: &mut Builder, m: &TensorMeta, start: &Start) -> Result<Value> {
    let ty = TensorType::new(DType::I64, m.sizes.clone());
    let mut acc = match start {
        Start::Fixed(offset) => b.splat(Literal::Int(*offset), &ty),
        Start::At(at) => b.broadcast_in_dim(at, &m.sizes, &[])?,
    };
    for d in 0..m.sizes.len() {
        if m.sizes[d] > 1 && m.strides[d] != 0 {
            let iota = b.iota(&ty, d);
            let s = b.splat(Literal::Int(m.strides[d]), &ty);
            let term = b.mul(&iota, &s)?;
            acc = b.add(&acc, &term)?;
        }
    }
    Ok(b.reshape(&acc, &[m.numel(), 1])?)
}

/// Reads the view `m`, starting at `start`, of the flat storage value `flat`.
pub fn read_view(b: &mut Builder, flat: &Value, m: &TensorMeta, start: &Start) -> Result<Value> {
    let numel = m.numel();
    if numel == 0 {
        return Ok(b.splat(Literal::Int(0), &m.ty()));
    }
    let flat = reinterpret(b, flat, m.dtype)?;
    if is_contiguous(&m.sizes, &m.strides) {
        let seg = segment(b, &flat, start, numel)?;
        return Ok(b.reshape(&seg, &m.sizes)?);
    }
    let Some(dims) = box_dims(m) else {
        let idx = view_indices(b, m, start)?;
        let g = b.gather(
            &flat,
            &idx,
            &GatherDims {
                offset_dims: vec![],
                collapsed_slice_dims: vec![0],
                start_index_map: vec![0],
                index_vector_dim: 1,
                slice_sizes: vec![1],
            },
            &[numel],
        );
        return Ok(b.reshape(&g, &m.sizes)?);
    };
    let core = if dims.is_empty() {
        let seg = segment(b, &flat, start, 1)?;
        b.reshape(&seg, &[])?
    } else {
        let (box_shape, prefix) = box_layout(&dims);
        let need = box_shape.iter().product::<i64>();
        let padded = pad_end(b, &flat, overhang(m, start, flat.shape()[0], need))?;
        let seg = segment(b, &padded, start, need)?;
        let boxed = b.reshape(&seg, &box_shape)?;
        let zeros = vec![0; box_shape.len()];
        let ones = vec![1; box_shape.len()];
        let sliced = b.slice(&boxed, &zeros, &prefix, &ones)?;
        let sorted_sizes: Vec<i64> = dims.iter().map(|d| d.1).collect();
        let sorted = b.reshape(&sliced, &sorted_sizes)?;
        // Put the data dims back in their original order.
        let mut order: Vec<usize> = (0..dims.len()).collect();
        order.sort_by_key(|&i| dims[i].0);
        let perm: Vec<i64> = order.iter().map(|&i| i as i64).collect();
        b.transpose(&sorted, &perm)?
    };
    let mut data_dims: Vec<usize> = dims.iter().map(|d| d.0).collect();
    data_dims.sort();
    let bdims: Vec<i64> = data_dims.iter().map(|&d| d as i64).collect();
    Ok(b.broadcast_in_dim(&core, &m.sizes, &bdims)?)
}

/// The dense box `[size_0, s_0/s_1, ..., s_k]` that holds a view, and the prefix of it the
/// view occupies.
fn box_layout(dims: &[(usize, i64, i64)]) -> (Vec<i64>, Vec<i64>) {
    let mut shape = vec![dims[0].1];
    let mut prefix = vec![dims[0].1];
    for w in dims.windows(2) {
        shape.push(w[0].2 / w[1].2);
        prefix.push(w[1].1);
    }
    shape.push(dims[dims.len() - 1].2);
    prefix.push(1);
    (shape, prefix)
}

/// Writes `value` (already of the view's shape and dtype) into the view `m`, starting at
/// `start`, and returns the new flat storage. `current` is the storage's value, or `None`
/// when the view covers the whole storage densely.
pub fn write_view(
    b: &mut Builder,
    current: Option<&Value>,
    value: &Value,
    (m, start): (&TensorMeta, &Start),
    storage: &StorageMeta,
) -> Result<Value> {
    let updated = write_view_as(b, current, value, (m, start), storage)?;
    reinterpret(b, &updated, storage.dtype)
}

/// `write_view` in the view's element type.
fn write_view_as(
    b: &mut Builder,
    current: Option<&Value>,
    value: &Value,
    (m, start): (&TensorMeta, &Start),
    storage: &StorageMeta,
) -> Result<Value> {
    let numel = m.numel();
    let total = storage_numel_as(storage, m.dtype);
    let Some(current) = current else {
        return Ok(b.reshape(value, &[total])?);
    };
    let current = &reinterpret(b, current, m.dtype)?;
    if numel == 0 {
        return Ok(current.clone());
    }
    if is_contiguous(&m.sizes, &m.strides) {
        let flat = b.reshape(value, &[numel])?;
        let at = start.index(b);
        return Ok(b.dynamic_update_slice(current, &flat, &[at]));
    }
    let broadcast = (0..m.sizes.len()).any(|d| m.sizes[d] > 1 && m.strides[d] == 0);
    let dims = if broadcast { None } else { box_dims(m) };
    let Some(dims) = dims else {
        let idx = view_indices(b, m, start)?;
        let flat = b.reshape(value, &[numel])?;
        return Ok(b.scatter(
            current,
            &idx,
            &flat,
            &ScatterDims {
                update_window_dims: vec![],
                inserted_window_dims: vec![0],
                scatter_dims_to_operand_dims: vec![0],
                index_vector_dim: 1,
            },
            None,
        ));
    };
    // Drop size-1 dims, put data dims in stride order, and fit into the box prefix.
    let mut order: Vec<usize> = (0..dims.len()).collect();
    order.sort_by_key(|&i| dims[i].0);
    let data_sizes: Vec<i64> = order.iter().map(|&i| dims[i].1).collect();
    let squeezed = b.reshape(value, &data_sizes)?;
    // `order[j]` is the sorted position of the j-th data dim; invert it.
    let mut perm = vec![0i64; dims.len()];
    for (j, &i) in order.iter().enumerate() {
        perm[i] = j as i64;
    }
    let sorted = b.transpose(&squeezed, &perm)?;
    let (box_shape, prefix) = box_layout(&dims);
    let update = b.reshape(&sorted, &prefix)?;
    let need = box_shape.iter().product::<i64>();
    // The box may reach past the storage's end: update a zero-padded copy and cut it back.
    let short = overhang(m, start, total, need);
    let padded = pad_end(b, current, short)?;
    let seg = segment(b, &padded, start, need)?;
    let boxed = b.reshape(&seg, &box_shape)?;
    let zeros: Vec<Value> = (0..box_shape.len()).map(|_| index(b, 0)).collect();
    let updated = b.dynamic_update_slice(&boxed, &update, &zeros);
    let flat = b.reshape(&updated, &[need])?;
    let at = start.index(b);
    let whole = b.dynamic_update_slice(&padded, &flat, &[at]);
    if short == 0 {
        return Ok(whole);
    }
    Ok(b.slice(&whole, &[0], &[total], &[1])?)
}
