//! Modified Bessel functions of orders 0 and 1: `i0`, `special_i0e`, `special_i1`,
//! `special_i1e` and `special_{,scaled_}modified_bessel_{i,k}{0,1}`, by Cephes' Chebyshev
//! expansions as PyTorch's CPU kernels (ATen's Math.h): one series on a bounded interval and
//! one in the inverted variable beyond it, both evaluated and `select`ed. Computed in f32 or
//! f64.

use tpurs_hlo::{Builder, CompareDir, Value};

use super::full;
use super::special::special;
use crate::error::Result;
use crate::table::Registry;

/// Chebyshev coefficients of `exp(-x) I0(x)` on [0, 8] (in `x/2 - 2`).
const I0_A: [f64; 30] = [
    -4.4153416464793395e-18,
    3.3307945188222384e-17,
    -2.431279846547955e-16,
    1.715391285555133e-15,
    -1.1685332877993451e-14,
    7.676185498604936e-14,
    -4.856446783111929e-13,
    2.95505266312964e-12,
    -1.726826291441556e-11,
    9.675809035373237e-11,
    -5.189795601635263e-10,
    2.6598237246823866e-09,
    -1.300025009986248e-08,
    6.046995022541919e-08,
    -2.670793853940612e-07,
    1.1173875391201037e-06,
    -4.4167383584587505e-06,
    1.6448448070728896e-05,
    -5.754195010082104e-05,
    0.00018850288509584165,
    -0.0005763755745385824,
    0.0016394756169413357,
    -0.004324309995050576,
    0.010546460394594998,
    -0.02373741480589947,
    0.04930528423967071,
    -0.09490109704804764,
    0.17162090152220877,
    -0.3046826723431984,
    0.6767952744094761,
];
/// Chebyshev coefficients of `exp(-x) sqrt(x) I0(x)` on (8, inf) (in `32/x - 2`).
const I0_B: [f64; 25] = [
    -7.233180487874754e-18,
    -4.830504485944182e-18,
    4.46562142029676e-17,
    3.461222867697461e-17,
    -2.8276239805165836e-16,
    -3.425485619677219e-16,
    1.7725601330565263e-15,
    3.8116806693526224e-15,
    -9.554846698828307e-15,
    -4.150569347287222e-14,
    1.54008621752141e-14,
    3.8527783827421426e-13,
    7.180124451383666e-13,
    -1.7941785315068062e-12,
    -1.3215811840447713e-11,
    -3.1499165279632416e-11,
    1.1889147107846439e-11,
    4.94060238822497e-10,
    3.3962320257083865e-09,
    2.266668990498178e-08,
    2.0489185894690638e-07,
    2.8913705208347567e-06,
    6.889758346916825e-05,
    0.0033691164782556943,
    0.8044904110141088,
];
/// Chebyshev coefficients of `exp(-x) I1(x) / x` on [0, 8].
const I1_A: [f64; 29] = [
    2.7779141127610464e-18,
    -2.111421214358166e-17,
    1.5536319577362005e-16,
    -1.1055969477353862e-15,
    7.600684294735408e-15,
    -5.042185504727912e-14,
    3.223793365945575e-13,
    -1.9839743977649436e-12,
    1.1736186298890901e-11,
    -6.663489723502027e-11,
    3.625590281552117e-10,
    -1.8872497517228294e-09,
    9.381537386495773e-09,
    -4.445059128796328e-08,
    2.0032947535521353e-07,
    -8.568720264695455e-07,
    3.4702513081376785e-06,
    -1.3273163656039436e-05,
    4.781565107550054e-05,
    -0.00016176081582589674,
    0.0005122859561685758,
    -0.0015135724506312532,
    0.004156422944312888,
    -0.010564084894626197,
    0.024726449030626516,
    -0.05294598120809499,
    0.1026436586898471,
    -0.17641651835783406,
    0.25258718644363365,
];
/// Chebyshev coefficients of `exp(-x) sqrt(x) I1(x)` on (8, inf).
const I1_B: [f64; 25] = [
    7.517296310842105e-18,
    4.414348323071708e-18,
    -4.6503053684893586e-17,
    -3.209525921993424e-17,
    2.96262899764595e-16,
    3.3082023109209285e-16,
    -1.8803547755107825e-15,
    -3.8144030724370075e-15,
    1.0420276984128802e-14,
    4.272440016711951e-14,
    -2.1015418427726643e-14,
    -4.0835511110921974e-13,
    -7.198551776245908e-13,
    2.0356285441470896e-12,
    1.4125807436613782e-11,
    3.2526035830154884e-11,
    -1.8974958123505413e-11,
    -5.589743462196584e-10,
    -3.835380385964237e-09,
    -2.6314688468895196e-08,
    -2.512236237870209e-07,
    -3.882564808877691e-06,
    -0.00011058893876262371,
    -0.009761097491361469,
    0.7785762350182801,
];
/// Chebyshev coefficients of `K0(x) + log(x/2) I0(x)` on (0, 2] (in `x^2 - 2`).
const K0_A: [f64; 10] = [
    1.374465435613523e-16,
    4.25981614279661e-14,
    1.0349695257633842e-11,
    1.904516377220209e-09,
    2.5347910790261494e-07,
    2.286212103119452e-05,
    0.001264615411446926,
    0.0359799365153615,
    0.3442898999246285,
    -0.5353273932339028,
];
/// Chebyshev coefficients of `exp(x) sqrt(x) K0(x)` on (2, inf) (in `8/x - 2`).
const K0_B: [f64; 25] = [
    5.300433772686263e-18,
    -1.6475804301524212e-17,
    5.2103915050390274e-17,
    -1.678231096805412e-16,
    5.512055978524319e-16,
    -1.848593377343779e-15,
    6.3400764774050706e-15,
    -2.2275133269916698e-14,
    8.032890775363575e-14,
    -2.9800969231727303e-13,
    1.140340588208475e-12,
    -4.514597883373944e-12,
    1.8559491149547177e-11,
    -7.957489244477107e-11,
    3.577397281400301e-10,
    -1.69753450938906e-09,
    8.574034017414225e-09,
    -4.660489897687948e-08,
    2.766813639445015e-07,
    -1.8317555227191195e-06,
    1.39498137188765e-05,
    -0.00012849549581627802,
    0.0015698838857300533,
    -0.0314481013119645,
    2.4403030820659555,
];
/// Chebyshev coefficients of `x (K1(x) - log(x/2) I1(x))` on (0, 2].
const K1_A: [f64; 11] = [
    -7.023863479386288e-18,
    -2.427449850519366e-15,
    -6.666901694199329e-13,
    -1.4114883926335278e-10,
    -2.213387630734726e-08,
    -2.4334061415659684e-06,
    -0.0001730288957513052,
    -0.006975723859639864,
    -0.12261118082265715,
    -0.3531559607765449,
    1.5253002273389478,
];
/// Chebyshev coefficients of `exp(x) sqrt(x) K1(x)` on (2, inf).
const K1_B: [f64; 25] = [
    -5.756744483665017e-18,
    1.7940508731475592e-17,
    -5.689462558442859e-17,
    1.838093544366639e-16,
    -6.057047248373319e-16,
    2.038703165624334e-15,
    -7.019837090418314e-15,
    2.4771544244813043e-14,
    -8.976705182324994e-14,
    3.3484196660784293e-13,
    -1.2891739609510289e-12,
    5.13963967348173e-12,
    -2.1299678384275683e-11,
    9.218315187605006e-11,
    -4.1903547593418965e-10,
    2.015049755197033e-09,
    -1.0345762465678097e-08,
    5.7410841254500495e-08,
    -3.5019606030878126e-07,
    2.406484947837217e-06,
    -1.936197974166083e-05,
    0.00019521551847135162,
    -0.002857816859622779,
    0.10392373657681724,
    2.7206261904844427,
];

/// Clenshaw's recurrence for a Chebyshev series in `y` (Cephes' `chbevl`).
fn chbevl(b: &mut Builder, y: &Value, coeffs: &[f64]) -> Result<Value> {
    let mut b0 = full(b, y, coeffs[0]);
    let mut b1 = full(b, y, 0.0);
    let mut b2 = b1.clone();
    for &c in &coeffs[1..] {
        b2 = b1;
        b1 = b0;
        let t = b.mul(y, &b1)?;
        let t = b.sub(&t, &b2)?;
        let k = full(b, y, c);
        b0 = b.add(&t, &k)?;
    }
    let d = b.sub(&b0, &b2)?;
    let half = full(b, y, 0.5);
    Ok(b.mul(&d, &half)?)
}

/// For `a = |x|`: the series `near` in `a/2 - 2` (used on [0, 8]), `far` in `32/a - 2`
/// (beyond), and whether `a <= 8`.
fn i_series(b: &mut Builder, a: &Value, near: &[f64], far: &[f64]) -> Result<[Value; 3]> {
    let half = full(b, a, 0.5);
    let two = full(b, a, 2.0);
    let y = b.mul(a, &half)?;
    let y = b.sub(&y, &two)?;
    let n = chbevl(b, &y, near)?;
    let k = full(b, a, 32.0);
    let y = b.div(&k, a)?;
    let y = b.sub(&y, &two)?;
    let f = chbevl(b, &y, far)?;
    let eight = full(b, a, 8.0);
    let inner = b.compare(CompareDir::Le, a, &eight)?;
    Ok([n, f, inner])
}

/// `I0(x)`, or `exp(-|x|) I0(x)` when `scaled`. Unscaled, the far form multiplies by
/// `exp(|x|)` before dividing by `sqrt(|x|)` as ATen does (NaN at infinity, like CPU).
fn i0_impl(b: &mut Builder, x: &Value, scaled: bool) -> Result<Value> {
    let a = b.abs(x);
    let [mut near, mut far, inner] = i_series(b, &a, &I0_A, &I0_B)?;
    if !scaled {
        let e = b.exp(&a);
        near = b.mul(&e, &near)?;
        far = b.mul(&e, &far)?;
    }
    let s = b.sqrt(&a);
    let far = b.div(&far, &s)?;
    Ok(b.select(&inner, &near, &far)?)
}

/// `I1(x)`, or `exp(-|x|) I1(x)` when `scaled`: odd, computed at `|x|` and negated.
fn i1_impl(b: &mut Builder, x: &Value, scaled: bool) -> Result<Value> {
    let a = b.abs(x);
    let [near, mut far, inner] = i_series(b, &a, &I1_A, &I1_B)?;
    let mut near = b.mul(&near, &a)?;
    if !scaled {
        let e = b.exp(&a);
        near = b.mul(&e, &near)?;
        far = b.mul(&e, &far)?;
    }
    let s = b.sqrt(&a);
    let far = b.div(&far, &s)?;
    let y = b.select(&inner, &near, &far)?;
    let ny = b.neg(&y);
    let zero = full(b, x, 0.0);
    let negative = b.compare(CompareDir::Lt, x, &zero)?;
    Ok(b.select(&negative, &ny, &y)?)
}

fn i0_of(b: &mut Builder, x: &Value) -> Result<Value> {
    i0_impl(b, x, false)
}

fn i0e_of(b: &mut Builder, x: &Value) -> Result<Value> {
    i0_impl(b, x, true)
}

fn i1_of(b: &mut Builder, x: &Value) -> Result<Value> {
    i1_impl(b, x, false)
}

fn i1e_of(b: &mut Builder, x: &Value) -> Result<Value> {
    i1_impl(b, x, true)
}

/// `K0(x)` or `K1(x)` (`order1`), times `exp(x)` when `scaled`: the series in `x^2 - 2`
/// with the logarithmic term on (0, 2], the series in `8/x - 2` times `exp(-x) / sqrt(x)`
/// beyond; inf at 0 and NaN for negative x, as ATen.
fn k_impl(b: &mut Builder, x: &Value, order1: bool, scaled: bool) -> Result<Value> {
    let (near_c, far_c): (&[f64], &[f64]) = if order1 {
        (&K1_A, &K1_B)
    } else {
        (&K0_A, &K0_B)
    };
    let two = full(b, x, 2.0);
    let x2 = b.mul(x, x)?;
    let y = b.sub(&x2, &two)?;
    let series = chbevl(b, &y, near_c)?;
    let half = full(b, x, 0.5);
    let hx = b.mul(x, &half)?;
    let l = b.log(&hx);
    let near = if order1 {
        // log(x/2) I1(x) + series / x
        let i = i1_of(b, x)?;
        let li = b.mul(&l, &i)?;
        let s = b.div(&series, x)?;
        b.add(&li, &s)?
    } else {
        // series - log(x/2) I0(x)
        let i = i0_of(b, x)?;
        let li = b.mul(&l, &i)?;
        b.sub(&series, &li)?
    };
    let eight = full(b, x, 8.0);
    let y = b.div(&eight, x)?;
    let y = b.sub(&y, &two)?;
    let mut far = chbevl(b, &y, far_c)?;
    let mut near = near;
    if scaled {
        let e = b.exp(x);
        near = b.mul(&near, &e)?;
    } else {
        let nx = b.neg(x);
        let e = b.exp(&nx);
        far = b.mul(&e, &far)?;
    }
    let s = b.sqrt(x);
    let far = b.div(&far, &s)?;
    let inner = b.compare(CompareDir::Le, x, &two)?;
    let v = b.select(&inner, &near, &far)?;
    let zero = full(b, x, 0.0);
    let negative = b.compare(CompareDir::Lt, x, &zero)?;
    let nan = full(b, x, f64::NAN);
    let v = b.select(&negative, &nan, &v)?;
    let at_zero = b.compare(CompareDir::Eq, x, &zero)?;
    let inf = full(b, x, f64::INFINITY);
    Ok(b.select(&at_zero, &inf, &v)?)
}

fn k0_of(b: &mut Builder, x: &Value) -> Result<Value> {
    k_impl(b, x, false, false)
}

fn k1_of(b: &mut Builder, x: &Value) -> Result<Value> {
    k_impl(b, x, true, false)
}

fn k0e_of(b: &mut Builder, x: &Value) -> Result<Value> {
    k_impl(b, x, false, true)
}

fn k1e_of(b: &mut Builder, x: &Value) -> Result<Value> {
    k_impl(b, x, true, true)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["i0", "i0_", "i0.out"], |ctx| special(ctx, i0_of));
    unary!(reg, i0_of, "special_modified_bessel_i0");
    unary!(reg, i0e_of, "special_i0e");
    unary!(reg, i1_of, "special_i1", "special_modified_bessel_i1");
    unary!(reg, i1e_of, "special_i1e");
    unary!(reg, k0_of, "special_modified_bessel_k0");
    unary!(reg, k1_of, "special_modified_bessel_k1");
    unary!(reg, k0e_of, "special_scaled_modified_bessel_k0");
    unary!(reg, k1e_of, "special_scaled_modified_bessel_k1");
}
