//! Layer weights at five bits: an int8 model's product weights rounded to a five-bit level times
//! a small integer per group, so that they stay int8 values in the same integer product
//! ([`Weights::Int5`](super::Weights::Int5)) and a model body carries them in 64% of the bytes.
//!
//! A weight `q` (`K × N` int8, one f32 scale per column, applied after the product) is cut along
//! `K` into groups of [`GROUP`] rows; each group of each column gets a multiplier `m` in 1..=8
//! and each value a level `l` in −15..=15 (five bits: a sign and a magnitude), and stands for
//! `m · l` (−120..=120: still an int8 value). `m` is the one whose rounding (`l` = `q / m`
//! rounded half away from zero, clamped) is nearest `q` in squared error, the smallest on a tie:
//! a pure function of the int8 values, so rounding a whole model at load ([`round_products`]) and
//! unpacking a body packed by [`pack_body`] give the same int8 values, and the same vectors bit
//! for bit, natively and in WebAssembly. The per-column scales, biases, layer norms and the
//! embedding tables are untouched.
//!
//! Why five bits: on Cranfield and NPL, queries embedded with four-bit weights (groups of 32 or
//! 16) lost 0.009–0.016 nDCG@10 in dense mode (significant), five bits less than 0.005 in every
//! mode (BENCHMARKS.md, "Layer weights at five bits").
//!
//! In a body each packed weight keeps its name, type and shape; its `raw_data` holds three
//! planes, each row-major (the multipliers group-major), so that gzip finds what repeats: the
//! magnitudes (two a byte, low nibble first: they lean to small values, 3.7 bits of information
//! in 4), the signs (eight a byte, least significant bit first) and the multipliers less one
//! (two a byte). `external_data` says `location: sextant-int5`, which [`unpack_graph`] reads
//! before anything else sees the graph.

#[cfg(feature = "model")]
use tract_onnx::pb;

#[cfg(feature = "model")]
use super::EmbedError;

/// Rows of a weight (along `K`) that share one multiplier per column.
pub const GROUP: usize = 32;
/// Bits of a level: a sign and a magnitude.
pub const BITS: u32 = 5;
/// The largest multiplier: `8 · ±15 = ±120` are int8 values.
const MAX_MULTIPLIER: i32 = 8;
/// The largest magnitude of a level.
const HIGHEST: i32 = 15;
#[cfg(feature = "model")]
/// The `external_data` location of a packed weight.
const LOCATION: &str = "sextant-int5";
#[cfg(feature = "model")]
/// `metadata_props` of a body whose product weights are packed: bits and group size.
const META_PACKING: &str = "sextant.int5.packing";

#[cfg(feature = "model")]
/// What [`META_PACKING`] says for this version's packing.
fn packing() -> String {
    format!("{BITS} bits, groups of {GROUP}")
}

/// `w / m` rounded half away from zero, clamped to a level.
fn level(w: i32, m: i32) -> i32 {
    let l = (2 * w.abs() + m) / (2 * m);
    w.signum() * l.min(HIGHEST)
}

/// Each multiplier's level and squared error for every int8 value (`[m − 1][w as u8]`): a
/// rounding is then lookups, with no division (WebAssembly rounds a whole model at load).
struct Tables {
    level: [[i8; 256]; MAX_MULTIPLIER as usize],
    error: [[u32; 256]; MAX_MULTIPLIER as usize],
}

fn tables() -> &'static Tables {
    static TABLES: std::sync::OnceLock<Tables> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let mut t = Tables {
            level: [[0; 256]; MAX_MULTIPLIER as usize],
            error: [[0; 256]; MAX_MULTIPLIER as usize],
        };
        for m in 1..=MAX_MULTIPLIER {
            for w in -128i32..=127 {
                let l = level(w, m);
                let row = (m - 1) as usize;
                t.level[row][w as u8 as usize] = l as i8;
                t.error[row][w as u8 as usize] = (w - m * l).pow(2) as u32;
            }
        }
        t
    })
}

/// The multipliers of `q` (`k × n`, row-major), `[group][column]`: for each group of each
/// column, the multiplier of least squared error (module docs), the smallest on a tie.
fn multipliers(q: &[i8], k: usize, n: usize) -> Vec<u8> {
    if n == 0 {
        return Vec::new();
    }
    let t = tables();
    let mut out = Vec::with_capacity(k.div_ceil(GROUP) * n);
    let mut errors = vec![[0u32; MAX_MULTIPLIER as usize]; n];
    for rows in q.chunks(GROUP * n) {
        errors.iter_mut().for_each(|e| *e = [0; MAX_MULTIPLIER as usize]);
        for row in rows.chunks_exact(n) {
            for (e, &w) in errors.iter_mut().zip(row) {
                for (m, sum) in e.iter_mut().enumerate() {
                    *sum += t.error[m][w as u8 as usize];
                }
            }
        }
        for e in &errors {
            let best = (1..e.len()).fold(0, |best, m| if e[m] < e[best] { m } else { best });
            out.push(best as u8 + 1);
        }
    }
    out
}

/// Calls `f(i, m, w)` for each value `w` of `q` (`_ × n`, row-major) with its multiplier.
fn each_value(q: &[i8], n: usize, m: &[u8], mut f: impl FnMut(usize, u8, i8)) {
    if n == 0 {
        return;
    }
    for (r, row) in q.chunks_exact(n).enumerate() {
        let group = &m[(r / GROUP) * n..][..n];
        for (c, (&w, &mult)) in row.iter().zip(group).enumerate() {
            f(r * n + c, mult, w);
        }
    }
}

/// Rounds `q` (`k × n` int8, row-major) in place to the values its packing stands for.
pub fn round(q: &mut [i8], k: usize, n: usize) {
    debug_assert_eq!(q.len(), k * n);
    let (t, m) = (tables(), multipliers(q, k, n));
    let mut rounded = vec![0i8; q.len()];
    each_value(q, n, &m, |i, mult, w| {
        // −120..=120 (module docs).
        rounded[i] = mult as i8 * t.level[usize::from(mult - 1)][w as u8 as usize];
    });
    q.copy_from_slice(&rounded);
}

/// Bytes of the packing of a `k × n` weight: magnitudes, signs, multipliers.
pub(super) fn packed_len(k: usize, n: usize) -> Option<usize> {
    let values = k.checked_mul(n)?;
    let multipliers = k.div_ceil(GROUP).checked_mul(n)?;
    values
        .div_ceil(2)
        .checked_add(values.div_ceil(8))?
        .checked_add(multipliers.div_ceil(2))
}

/// Nibbles two a byte, low first.
fn nibbles(values: impl Iterator<Item = u8>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut pending = None;
    for v in values {
        match pending.take() {
            Some(low) => out.push(low | (v << 4)),
            None => pending = Some(v & 0xF),
        }
    }
    out.extend(pending);
    out
}

/// The packing of `q` (`k × n` int8, row-major): magnitudes, signs, multipliers.
pub fn pack(q: &[i8], k: usize, n: usize) -> Vec<u8> {
    debug_assert_eq!(q.len(), k * n);
    let (t, m) = (tables(), multipliers(q, k, n));
    let mut magnitudes = vec![0u8; q.len().div_ceil(2)];
    let mut signs = vec![0u8; q.len().div_ceil(8)];
    each_value(q, n, &m, |i, mult, w| {
        let l = t.level[usize::from(mult - 1)][w as u8 as usize];
        magnitudes[i / 2] |= l.unsigned_abs() << (4 * (i % 2));
        signs[i / 8] |= u8::from(l < 0) << (i % 8);
    });
    let mut out = magnitudes;
    out.extend(signs);
    out.extend(nibbles(m.iter().map(|&m| m - 1)));
    out
}

/// The int8 values a packing of a `k × n` weight stands for, or what is wrong with it.
pub fn unpack(bytes: &[u8], k: usize, n: usize) -> Result<Vec<u8>, String> {
    let expected = packed_len(k, n).ok_or_else(|| format!("a weight of {k} × {n} is too large"))?;
    if bytes.len() != expected {
        return Err(format!(
            "a {BITS}-bit weight of {k} × {n} takes {expected} bytes, not {}",
            bytes.len()
        ));
    }
    let values = k * n;
    let (magnitudes, rest) = bytes.split_at(values.div_ceil(2));
    let (signs, multipliers) = rest.split_at(values.div_ceil(8));
    let m: Vec<i32> = (0..k.div_ceil(GROUP) * n)
        .map(|j| i32::from((multipliers[j / 2] >> (4 * (j % 2))) & 0xF) + 1)
        .collect();
    if let Some(bad) = m.iter().find(|&&m| m > MAX_MULTIPLIER) {
        return Err(format!("a multiplier of {bad}, over the largest, {MAX_MULTIPLIER}"));
    }
    let mut out = vec![0u8; values];
    for (r, row) in out.chunks_exact_mut(n.max(1)).enumerate() {
        let group = &m[(r / GROUP) * n..][..n];
        for (c, (v, &mult)) in row.iter_mut().zip(group).enumerate() {
            let i = r * n + c;
            // A nibble: at most 15, the largest magnitude; times at most 8.
            let magnitude = mult * i32::from((magnitudes[i / 2] >> (4 * (i % 2))) & 0xF);
            let negative = (signs[i / 8] >> (i % 8)) & 1 == 1;
            *v = (if negative { -magnitude } else { magnitude }) as i8 as u8;
        }
    }
    Ok(out)
}

#[cfg(feature = "model")]
/// An int8 initializer's values and shape `[k, n]`, if it is one.
fn int8_matrix(t: &pb::TensorProto) -> Option<(Vec<i8>, usize, usize)> {
    use pb::tensor_proto::DataType;
    if t.data_type != DataType::Int8 as i32 || t.data_location == Some(pb::tensor_proto::DataLocation::External as i32)
    {
        return None;
    }
    let [k, n] = t.dims[..] else { return None };
    let (k, n) = (usize::try_from(k).ok()?, usize::try_from(n).ok()?);
    if k == 0 || n == 0 {
        return None;
    }
    let values: Vec<i8> = if t.raw_data.is_empty() {
        t.int32_data.iter().map(|&x| x as i8).collect()
    } else {
        t.raw_data.iter().map(|&b| b as i8).collect()
    };
    (values.len() == k.checked_mul(n)?).then_some((values, k, n))
}

#[cfg(feature = "model")]
/// [`Weights::Int5`](super::Weights::Int5) on a whole model: rounds every int8 weight of a
/// product (`MatMul(x, Mul(Cast(q), s))`, one scale per column) as packing it would. Returns how
/// many.
pub(super) fn round_products(graph: &mut pb::GraphProto) -> usize {
    let names = super::rewrite::product_weights(graph);
    let mut done = 0;
    for t in &mut graph.initializer {
        if !names.contains(&t.name) {
            continue;
        }
        if let Some((mut q, k, n)) = int8_matrix(t) {
            round(&mut q, k, n);
            t.raw_data = q.iter().map(|&v| v as u8).collect();
            t.int32_data.clear();
            done += 1;
        }
    }
    done
}

#[cfg(feature = "model")]
/// Packs a model body's product weights at five bits (module docs): the bytes of a body whose
/// vectors are the whole model's with [`Weights::Int5`](super::Weights::Int5), bit for bit.
/// Returns the packed body and how many weights were packed.
pub fn pack_body(body: &[u8]) -> Result<(Vec<u8>, usize), EmbedError> {
    use prost::Message;
    let mut proto = super::runner::decode_model(body)?;
    if proto.metadata_props.iter().any(|p| p.key == META_PACKING) {
        return Err(EmbedError::BadModel {
            reason: format!("this model's weights are already packed at {BITS} bits"),
        });
    }
    let graph = proto.graph.as_mut().ok_or_else(|| EmbedError::BadModel {
        reason: "the model has no graph".into(),
    })?;
    let names = super::rewrite::product_weights(graph);
    let mut done = 0;
    for t in &mut graph.initializer {
        if !names.contains(&t.name) {
            continue;
        }
        if let Some((q, k, n)) = int8_matrix(t) {
            t.raw_data = pack(&q, k, n);
            t.int32_data.clear();
            t.data_location = Some(pb::tensor_proto::DataLocation::External as i32);
            t.external_data = vec![pb::StringStringEntryProto {
                key: "location".into(),
                value: LOCATION.into(),
            }];
            done += 1;
        }
    }
    if done == 0 {
        return Err(EmbedError::BadModel {
            reason: format!("the model has no int8 weight of a product to pack at {BITS} bits"),
        });
    }
    proto.metadata_props.push(pb::StringStringEntryProto {
        key: META_PACKING.into(),
        value: packing(),
    });
    Ok((proto.encode_to_vec(), done))
}

#[cfg(feature = "model")]
/// Whether `proto`'s product weights are packed by [`pack_body`].
pub fn is_packed(proto: &pb::ModelProto) -> bool {
    proto.metadata_props.iter().any(|p| p.key == META_PACKING)
}

#[cfg(feature = "model")]
/// Unpacks the weights [`pack_body`] packed, in place, before anything else reads the graph.
/// Returns how many (0 for any other model).
pub(super) fn unpack_graph(proto: &mut pb::ModelProto) -> Result<usize, EmbedError> {
    let said = proto
        .metadata_props
        .iter()
        .find(|p| p.key == META_PACKING)
        .map(|p| p.value.clone());
    let packed = |t: &pb::TensorProto| {
        t.external_data
            .iter()
            .any(|e| e.key == "location" && e.value == LOCATION)
    };
    let Some(graph) = proto.graph.as_mut() else {
        return Ok(0);
    };
    let count = graph.initializer.iter().filter(|t| packed(t)).count();
    if count == 0 && said.is_none() {
        return Ok(0);
    }
    let bad = |reason: String| EmbedError::BadModel {
        reason: format!("{reason}; build the site again with this version (sextant build --site packs the model body)"),
    };
    if said.as_deref() != Some(packing().as_str()) {
        return Err(bad(format!(
            "the model's weights are packed as {:?}, and this version reads {:?}",
            said.as_deref().unwrap_or("(not said)"),
            packing()
        )));
    }
    for t in graph.initializer.iter_mut().filter(|t| packed(t)) {
        let dims: Option<Vec<usize>> = t.dims.iter().map(|&d| usize::try_from(d).ok()).collect();
        let (k, n) = match dims.as_deref() {
            Some(&[k, n]) if t.data_type == pb::tensor_proto::DataType::Int8 as i32 => (k, n),
            _ => return Err(bad(format!("the packed weight {} is not a 2-D int8 tensor", t.name))),
        };
        t.raw_data = unpack(&t.raw_data, k, n).map_err(|e| bad(format!("the packed weight {}: {e}", t.name)))?;
        t.data_location = None;
        t.external_data.clear();
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of int8 values (a fixed linear congruential sequence): mostly
    /// small, as weights are, with the extremes present.
    fn values(len: usize, seed: u64) -> Vec<i8> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let v = ((s >> 33) % 256) as i32 - 128;
                (if (s >> 20).is_multiple_of(4) { v } else { v / 4 }) as i8
            })
            .collect()
    }

    #[test]
    fn unpacking_a_packing_gives_the_rounded_values_for_any_shape() {
        for (k, n, seed) in [
            (64, 8, 1),
            (33, 3, 2),
            (31, 5, 3),
            (1, 1, 4),
            (96, 7, 5),
            (384, 384, 6),
            (0, 3, 7),
            (5, 0, 8),
        ] {
            let q = values(k * n, seed);
            let mut rounded = q.clone();
            round(&mut rounded, k, n);
            let packed = pack(&q, k, n);
            assert_eq!(packed.len(), packed_len(k, n).unwrap(), "{k} × {n}");
            let bytes: Vec<u8> = rounded.iter().map(|&v| v as u8).collect();
            assert_eq!(unpack(&packed, k, n).unwrap(), bytes, "{k} × {n}");
            // Rounding is idempotent: the rounded values are their own packing's.
            let mut again = rounded.clone();
            round(&mut again, k, n);
            assert_eq!(again, rounded, "{k} × {n}");
        }
    }

    #[test]
    fn each_group_takes_the_multiplier_nearest_its_values() {
        // Exactly representable with m = 3: kept as they are.
        let mut q: Vec<i8> = (0..32).map(|i| (3 * ((i % 31) - 15)) as i8).collect();
        let original = q.clone();
        round(&mut q, 32, 1);
        assert_eq!(q, original);
        // The extremes: 127 and −128 need the largest multiplier (8 · ±15 = ±120).
        let mut q = vec![0i8; 32];
        q[0] = 127;
        q[1] = -128;
        q[2] = 1;
        round(&mut q, 32, 1);
        assert_eq!((q[0], q[1], q[2]), (120, -120, 0));
        // No multiplier does better than the chosen one on any group.
        let q = values(32 * 4, 9);
        let mut r = q.clone();
        round(&mut r, 32, 4);
        for c in 0..4 {
            let error = |m: i32| -> i64 {
                (0..32)
                    .map(|row| {
                        let w = i32::from(q[row * 4 + c]);
                        i64::from(w - m * level(w, m)).pow(2)
                    })
                    .sum()
            };
            let chosen: i64 = (0..32)
                .map(|row| (i64::from(q[row * 4 + c]) - i64::from(r[row * 4 + c])).pow(2))
                .sum();
            assert!((1..=MAX_MULTIPLIER).all(|m| chosen <= error(m)), "column {c}");
        }
    }

    #[test]
    fn a_packing_of_the_wrong_length_is_refused() {
        let packed = pack(&values(64, 1), 8, 8);
        let err = unpack(&packed[1..], 8, 8).unwrap_err();
        assert!(err.contains("takes") && err.contains("bytes"), "{err}");
        assert!(unpack(&packed, usize::MAX, 2).is_err());
        // A multiplier over 8 is no packing's.
        let mut bad = packed;
        let last = bad.len() - 1;
        bad[last] = 0xFF;
        assert!(unpack(&bad, 8, 8).unwrap_err().contains("multiplier"));
    }

    #[test]
    fn levels_round_half_away_from_zero_and_clamp() {
        assert_eq!((level(3, 2), level(-3, 2), level(1, 2), level(-1, 2)), (2, -2, 1, -1));
        assert_eq!((level(127, 1), level(-128, 1), level(0, 5)), (15, -15, 0));
    }
}
