//! Bessel functions of the first and second kind of orders 0 and 1 and the Airy function Ai
//! (`special_bessel_{j,y}{0,1}`, `special_airy_ai`), by Cephes' rational approximations as
//! PyTorch's CPU kernels (ATen's Math.h): a rational form near 0 and the asymptotic
//! amplitude-phase form beyond, both evaluated and `select`ed. Computed in f32 or f64.

use std::f64::consts::{FRAC_2_PI, FRAC_PI_4, PI};

use tpurs_hlo::{Builder, CompareDir, Value};

use super::{full, polevl};
use crate::error::Result;
use crate::table::Registry;

/// J0 / Y0 for x > 5: the amplitude `P = PP / PQ` and phase term `Q = QP / QQ`,
/// rational in `25 / x^2`.
const J0_PP: [f64; 7] = [
    0.0007969367292973471,
    0.08283523921074408,
    1.239533716464143,
    5.447250030587687,
    8.74716500199817,
    5.303240382353949,
    1.0,
];
const J0_PQ: [f64; 7] = [
    0.0009244088105588637,
    0.08562884743544745,
    1.2535274390105895,
    5.470977403304171,
    8.761908832370695,
    5.306052882353947,
    1.0,
];
const J0_QP: [f64; 8] = [
    -0.011366383889846916,
    -1.2825271867050931,
    -19.553954425773597,
    -93.20601521237683,
    -177.68116798048806,
    -147.07750515495118,
    -51.41053267665993,
    -6.050143506007285,
];
const J0_QQ: [f64; 7] = [
    64.3178256118178,
    856.4300259769806,
    3882.4018360540163,
    7240.467741956525,
    5930.727011873169,
    2062.0933166032783,
    242.0057402402914,
];
/// J0 on [0, 5]: `(x^2 - r1)(x^2 - r2) RP(x^2) / RQ(x^2)`, r1, r2 the first squared zeros.
const J0_RP: [f64; 4] = [
    -4794432209.782018,
    1956174919465.5657,
    -249248344360967.72,
    9708622510473064.0,
];
const J0_RQ: [f64; 8] = [
    499.563147152651,
    173785.4016763747,
    48440965.83399621,
    11185553704.535683,
    2112775201154.892,
    310518229857422.56,
    3.1812195594320496e+16,
    1.7108629408104315e+18,
];
/// J1 / Y1 for x > 5, as J0_PP.
const J1_PP: [f64; 7] = [
    0.0007621256162081731,
    0.07313970569409176,
    1.1271960812968493,
    5.112079511468076,
    8.424045901417724,
    5.214515986823615,
    1.0,
];
const J1_PQ: [f64; 7] = [
    0.0005713231280725487,
    0.06884559087544954,
    1.105142326340617,
    5.073863861286015,
    8.399855543276042,
    5.209828486823619,
    1.0,
];
const J1_QP: [f64; 8] = [
    0.05108625947501766,
    4.982138729512334,
    75.82382841325453,
    366.7796093601508,
    710.8563049989261,
    597.4896124006136,
    211.68875710057213,
    25.207020585802372,
];
const J1_QQ: [f64; 7] = [
    74.23732770356752,
    1056.4488603826283,
    4986.410583376536,
    9562.318924047562,
    7997.041604473507,
    2826.1927851763908,
    336.0936078106983,
];
/// J1 on [0, 5]: `x (x^2 - r1)(x^2 - r2) RP(x^2) / RQ(x^2)`.
const J1_RP: [f64; 4] = [
    -899971225.7055594,
    452228297998.19403,
    -72749424522181.83,
    3682957328638529.0,
];
const J1_RQ: [f64; 8] = [
    620.8364781180543,
    256987.25675774884,
    83514679.14319493,
    22151159547.97925,
    4749141220799.914,
    784369607876235.9,
    8.952223361846274e+16,
    5.322786203326801e+18,
];
/// Y0 on (0, 5]: `YP(x^2) / YQ(x^2) + (2/pi) log(x) J0(x)`.
const Y0_YP: [f64; 8] = [
    15592.436785523574,
    -14663929.59039716,
    5435264770.518765,
    -982136065717.9115,
    87590639439536.7,
    -3466283033847297.0,
    4.4273326857256984e+16,
    -1.8495080043698668e+16,
];
const Y0_YQ: [f64; 7] = [
    1041.2835366425984,
    626107.330137135,
    268919633.39381415,
    86400248710.3935,
    20297961275010.555,
    3171577528429750.5,
    2.5059625617265306e+17,
];
/// Y1 on (0, 5]: `x YP(x^2) / YQ(x^2) + (2/pi) (J1(x) log(x) - 1/x)`.
const Y1_YP: [f64; 6] = [
    1263204747.9017804,
    -647355876379.1603,
    114509511541823.73,
    -8127702555013251.0,
    2.024394757135949e+17,
    -7.788771962659501e+17,
];
const Y1_YQ: [f64; 8] = [
    594.3015923461282,
    235564.09294306856,
    73481194.44597217,
    18760131610.870617,
    3882312774962.3857,
    620557727146953.8,
    6.871410873553005e+16,
    3.9727060811656064e+18,
];
/// Ai for x >= 2.09: `exp(-zeta) AN(1/zeta) / AD(1/zeta) / (2 sqrt(pi) x^(1/4))`.
const AIRY_AN: [f64; 8] = [
    0.346538101525629,
    12.007595273964581,
    76.27960536152345,
    168.08922493463058,
    159.75639135016442,
    70.53609068404442,
    14.026469116338967,
    1.0,
];
const AIRY_AD: [f64; 8] = [
    0.5675945326387702,
    14.75625625848472,
    84.51389701414746,
    177.31808814540045,
    164.2346928715297,
    71.47784008255756,
    14.095913560783403,
    1.0,
];
/// Ai for x < -2.09: amplitude and phase corrections rational in `1/zeta^2`.
const AIRY_AFN: [f64; 9] = [
    -0.1316963234183318,
    -0.6264565444319123,
    -0.6931580360369335,
    -0.2797799815451191,
    -0.04919001326095003,
    -0.004062659235948854,
    -0.0001592764962392621,
    -2.776491081552329e-06,
    -1.6778769848911465e-08,
];
const AIRY_AFD: [f64; 9] = [
    13.356042070655324,
    32.682503279522464,
    26.736704094149957,
    9.187074029072596,
    1.4752914677166642,
    0.11568717379518804,
    0.004402916416152112,
    7.547203482874142e-05,
    4.5185009297058035e-07,
];
const AIRY_AGN: [f64; 11] = [
    0.01973399320916857,
    0.39110302961568827,
    1.0657989759959559,
    0.9391692298166502,
    0.35146565610554764,
    0.06338889196289255,
    0.005858041130483885,
    0.000282851600836737,
    6.98793669997261e-06,
    8.117892395543892e-08,
    3.415517847659236e-10,
];
const AIRY_AGD: [f64; 10] = [
    9.30892908077442,
    19.835292871831214,
    15.564662893286462,
    5.476860694229755,
    0.9542936116189619,
    0.08645808263523921,
    0.004126565238242226,
    0.00010125908511650914,
    1.1716673321441352e-06,
    4.9183457006293e-09,
];
/// Amplitude and phase rationals of the Bessel tables.
struct Asymptotic {
    pp: &'static [f64],
    pq: &'static [f64],
    qp: &'static [f64],
    qq: &'static [f64],
    /// The phase shift: pi/4 for order 0, 3pi/4 for order 1.
    shift: f64,
}

const ORDER0: Asymptotic = Asymptotic {
    pp: &J0_PP,
    pq: &J0_PQ,
    qp: &J0_QP,
    qq: &J0_QQ,
    shift: FRAC_PI_4,
};
const ORDER1: Asymptotic = Asymptotic {
    pp: &J1_PP,
    pq: &J1_PQ,
    qp: &J1_QP,
    qq: &J1_QQ,
    shift: 3.0 * FRAC_PI_4,
};

fn ratio(b: &mut Builder, x: &Value, num: &[f64], den: &[f64]) -> Result<Value> {
    let n = polevl(b, x, num)?;
    let d = polevl(b, x, den)?;
    Ok(b.div(&n, &d)?)
}

/// The large-`a` form `sqrt(2 / (pi a)) (P cos(t) - (5/a) Q sin(t))`, `t = a - shift`, of J
/// (`second_kind`: `P sin(t) + (5/a) Q cos(t)`, of Y). NaN at infinity, like CPU.
fn asymptotic(b: &mut Builder, a: &Value, t: &Asymptotic, second_kind: bool) -> Result<Value> {
    let a2 = b.mul(a, a)?;
    let c25 = full(b, a, 25.0);
    let w = b.div(&c25, &a2)?;
    let p = ratio(b, &w, t.pp, t.pq)?;
    let q = ratio(b, &w, t.qp, t.qq)?;
    let c5 = full(b, a, 5.0);
    let f = b.div(&c5, a)?;
    let q = b.mul(&f, &q)?;
    let shift = full(b, a, t.shift);
    let arg = b.sub(a, &shift)?;
    let (s, c) = (b.sin(&arg), b.cos(&arg));
    let v = if second_kind {
        let u = b.mul(&p, &s)?;
        let v = b.mul(&q, &c)?;
        b.add(&u, &v)?
    } else {
        let u = b.mul(&p, &c)?;
        let v = b.mul(&q, &s)?;
        b.sub(&u, &v)?
    };
    let k = full(b, a, FRAC_2_PI.sqrt());
    let v = b.mul(&v, &k)?;
    let r = b.sqrt(a);
    Ok(b.div(&v, &r)?)
}

/// `select(x <= 5, near, far)`.
fn up_to_five(b: &mut Builder, x: &Value, near: &Value, far: &Value) -> Result<Value> {
    let five = full(b, x, 5.0);
    let inner = b.compare(CompareDir::Le, x, &five)?;
    Ok(b.select(&inner, near, far)?)
}

fn j0_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let a = b.abs(x);
    let z = b.mul(x, x)?;
    // Below 1e-5 the two-term series 1 - x^2/4.
    let one_v = full(b, x, 1.0);
    let quarter = full(b, x, 0.25);
    let t = b.mul(&z, &quarter)?;
    let tiny = b.sub(&one_v, &t)?;
    let r1 = full(b, x, 5.783_185_962_946_784);
    let r2 = full(b, x, 30.471_262_343_662_087);
    let f1 = b.sub(&z, &r1)?;
    let f2 = b.sub(&z, &r2)?;
    let r = ratio(b, &z, &J0_RP, &J0_RQ)?;
    let near = b.mul(&f1, &f2)?;
    let near = b.mul(&near, &r)?;
    let eps = full(b, x, 1e-5);
    let is_tiny = b.compare(CompareDir::Lt, &a, &eps)?;
    let near = b.select(&is_tiny, &tiny, &near)?;
    let far = asymptotic(b, &a, &ORDER0, false)?;
    up_to_five(b, &a, &near, &far)
}

fn j1_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let a = b.abs(x);
    let z = b.mul(x, x)?;
    // Odd in x, so the near form keeps the sign (and -0 at -0).
    let r = ratio(b, &z, &J1_RP, &J1_RQ)?;
    let r1 = full(b, x, 14.681_970_642_123_893);
    let r2 = full(b, x, 49.218_456_321_694_6);
    let f1 = b.sub(&z, &r1)?;
    let f2 = b.sub(&z, &r2)?;
    let near = b.mul(&r, x)?;
    let near = b.mul(&near, &f1)?;
    let near = b.mul(&near, &f2)?;
    let far = asymptotic(b, &a, &ORDER1, false)?;
    let neg_far = b.neg(&far);
    let zero = full(b, x, 0.0);
    let negative = b.compare(CompareDir::Lt, x, &zero)?;
    let far = b.select(&negative, &neg_far, &far)?;
    up_to_five(b, &a, &near, &far)
}

/// Y0: `log` makes the near form -inf at 0 and NaN for negative x (and -inf), as CPU.
fn y0_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let z = b.mul(x, x)?;
    let r = ratio(b, &z, &Y0_YP, &Y0_YQ)?;
    let k = full(b, x, FRAC_2_PI);
    let l = b.log(x);
    let j = j0_of(b, x)?;
    let t = b.mul(&k, &l)?;
    let t = b.mul(&t, &j)?;
    let near = b.add(&r, &t)?;
    let far = asymptotic(b, x, &ORDER0, true)?;
    up_to_five(b, x, &near, &far)
}

/// Y1: as Y0, with -inf set at 0 explicitly (`J1(0) log(0)` is NaN).
fn y1_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let z = b.mul(x, x)?;
    let r = ratio(b, &z, &Y1_YP, &Y1_YQ)?;
    let r = b.mul(x, &r)?;
    let j = j1_of(b, x)?;
    let l = b.log(x);
    let jl = b.mul(&j, &l)?;
    let one_v = full(b, x, 1.0);
    let inv = b.div(&one_v, x)?;
    let t = b.sub(&jl, &inv)?;
    let k = full(b, x, FRAC_2_PI);
    let t = b.mul(&k, &t)?;
    let near = b.add(&r, &t)?;
    let far = asymptotic(b, x, &ORDER1, true)?;
    let y = up_to_five(b, x, &near, &far)?;
    let zero = full(b, x, 0.0);
    let at_zero = b.compare(CompareDir::Eq, x, &zero)?;
    let ninf = full(b, x, f64::NEG_INFINITY);
    Ok(b.select(&at_zero, &ninf, &y)?)
}

/// Terms of Ai's Maclaurin series (ATen sums until they fall below the epsilon; for
/// `|x| < 2.09` this many reach the f64 epsilon).
const AIRY_TERMS: usize = 12;

/// `Ai(x)`: the amplitude-phase form below -2.09, the exponentially decaying form from 2.09
/// (0 above 103.892, where its exponential would overflow), the Maclaurin series between; NaN
/// at +-inf, as ATen.
fn airy_ai_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let one_v = full(b, x, 1.0);
    let two = full(b, x, 2.0);
    let three = full(b, x, 3.0);
    let ispi = full(b, x, 1.0 / PI.sqrt());
    // x < -2.09, zeta = (2/3) (-x)^(3/2).
    let mx = b.neg(x);
    let sq = b.sqrt(&mx);
    let m2 = full(b, x, -2.0);
    let zeta = b.mul(&m2, x)?;
    let zeta = b.mul(&zeta, &sq)?;
    let zeta = b.div(&zeta, &three)?;
    let z = b.div(&one_v, &zeta)?;
    let zz = b.mul(&z, &z)?;
    let f = ratio(b, &zz, &AIRY_AFN, &AIRY_AFD)?;
    let f = b.mul(&zz, &f)?;
    let f = b.add(&one_v, &f)?;
    let g = ratio(b, &zz, &AIRY_AGN, &AIRY_AGD)?;
    let g = b.mul(&z, &g)?;
    let quarter_pi = full(b, x, FRAC_PI_4);
    let t = b.add(&zeta, &quarter_pi)?;
    let (s, c) = (b.sin(&t), b.cos(&t));
    let u = b.mul(&s, &f)?;
    let v = b.mul(&c, &g)?;
    let osc = b.sub(&u, &v)?;
    let root4 = b.sqrt(&sq);
    let amp = b.div(&ispi, &root4)?;
    let neg = b.mul(&amp, &osc)?;
    // x >= 2.09.
    let sq = b.sqrt(x);
    let zeta = b.mul(&two, x)?;
    let zeta = b.mul(&zeta, &sq)?;
    let zeta = b.div(&zeta, &three)?;
    let iz = b.div(&one_v, &zeta)?;
    let r = ratio(b, &iz, &AIRY_AN, &AIRY_AD)?;
    let r = b.mul(&ispi, &r)?;
    let root4 = b.sqrt(&sq);
    let d = b.mul(&two, &root4)?;
    let e = b.exp(&zeta);
    let d = b.mul(&d, &e)?;
    let pos = b.div(&r, &d)?;
    // |x| < 2.09: Ai = c1 f(x) - c2 g(x), f and g the two series in x^3.
    let x3 = b.mul(x, x)?;
    let x3 = b.mul(&x3, x)?;
    let (mut fm, mut fs) = (one_v.clone(), one_v.clone());
    let (mut gm, mut gs) = (x.clone(), x.clone());
    for i in 0..AIRY_TERMS {
        let k = 3.0 * i as f64;
        let cf = full(b, x, 1.0 / ((k + 2.0) * (k + 3.0)));
        let cg = full(b, x, 1.0 / ((k + 3.0) * (k + 4.0)));
        fm = b.mul(&fm, &x3)?;
        fm = b.mul(&fm, &cf)?;
        fs = b.add(&fs, &fm)?;
        gm = b.mul(&gm, &x3)?;
        gm = b.mul(&gm, &cg)?;
        gs = b.add(&gs, &gm)?;
    }
    let c1 = full(b, x, 0.355_028_053_887_817_2);
    let c2 = full(b, x, 0.258_819_403_792_806_8);
    let fs = b.mul(&c1, &fs)?;
    let gs = b.mul(&c2, &gs)?;
    let series = b.sub(&fs, &gs)?;
    let lo = full(b, x, -2.09);
    let hi = full(b, x, 2.09);
    let below = b.compare(CompareDir::Lt, x, &lo)?;
    let above = b.compare(CompareDir::Ge, x, &hi)?;
    let y = b.select(&above, &pos, &series)?;
    let y = b.select(&below, &neg, &y)?;
    let cut = full(b, x, 103.892);
    let beyond = b.compare(CompareDir::Gt, x, &cut)?;
    let zero = full(b, x, 0.0);
    let y = b.select(&beyond, &zero, &y)?;
    let a = b.abs(x);
    let inf = full(b, x, f64::INFINITY);
    let infinite = b.compare(CompareDir::Eq, &a, &inf)?;
    let nan = full(b, x, f64::NAN);
    Ok(b.select(&infinite, &nan, &y)?)
}

pub(crate) fn register(reg: &mut Registry) {
    unary!(reg, j0_of, "special_bessel_j0");
    unary!(reg, j1_of, "special_bessel_j1");
    unary!(reg, y0_of, "special_bessel_y0");
    unary!(reg, y1_of, "special_bessel_y1");
    unary!(reg, airy_ai_of, "special_airy_ai");
}
