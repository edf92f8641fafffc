//! Vector arithmetic shared by the embedder (normalising sentence vectors) and the vector index
//! (similarity). Pure functions on slices; the summation order is fixed so that native and wasm
//! give the same bits.

/// Dot product of two equal-length slices (shorter length if they differ).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Four independent accumulators: the same order everywhere (native and wasm agree) and
    // room for the compiler to vectorise.
    let mut acc = [0f32; 4];
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut ca = a.chunks_exact(4);
    let mut cb = b.chunks_exact(4);
    for (x, y) in (&mut ca).zip(&mut cb) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let mut tail = 0f32;
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        tail += x * y;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// Scales a vector to unit length (a zero vector stays zero).
pub fn l2_normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|v| *v /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_gives_unit_length_and_keeps_zero() {
        let mut v = vec![3.0, 4.0];
        l2_normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut z = vec![0.0, 0.0];
        l2_normalize(&mut z);
        assert_eq!(z, vec![0.0, 0.0]);
    }

    #[test]
    fn dot_handles_tails_and_unequal_lengths() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [1.0, 1.0, 1.0, 1.0, 1.0, 2.0];
        assert_eq!(dot(&a, &b), 27.0);
        assert_eq!(dot(&a, &b[..2]), 3.0);
        assert_eq!(dot(&[], &a), 0.0);
    }
}
