//! Little-endian, bounds-checked byte encoding shared by the binary files of an index.
//!
//! [`ByteReader`] never panics: every read checks the remaining length and returns
//! [`DecodeError`] instead.

/// A read ran past the end of its section or met an impossible value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes remain than a field needs.
    #[error("needed {needed} more bytes at offset {offset} but only {available} remain")]
    Truncated {
        /// Offset of the read within the section.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left.
        available: usize,
    },
    /// A varint is longer than 10 bytes or overflows 64 bits.
    #[error("malformed varint at offset {offset}")]
    BadVarint {
        /// Offset of the varint within the section.
        offset: usize,
    },
    /// A value is outside what the format allows.
    #[error("invalid {what} at offset {offset}")]
    Invalid {
        /// Which field.
        what: &'static str,
        /// Offset of the field within the section.
        offset: usize,
    },
}

/// A cursor over a byte slice.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> ByteReader<'a> {
    /// Starts reading at the beginning of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, offset: 0 }
    }

    /// The current offset.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.offset)
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .offset
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(DecodeError::Truncated {
                offset: self.offset,
                needed: n,
                available: self.remaining(),
            })?;
        let slice = self.bytes.get(self.offset..end).ok_or(DecodeError::Truncated {
            offset: self.offset,
            needed: n,
            available: self.remaining(),
        })?;
        self.offset = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A little-endian `f32`.
    pub fn f32(&mut self) -> Result<f32, DecodeError> {
        Ok(f32::from_le_bytes(self.array()?))
    }

    /// An unsigned LEB128 varint of at most 64 bits.
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let start = self.offset;
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *self.take(1)?.first().ok_or(DecodeError::BadVarint { offset: start })?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(DecodeError::BadVarint { offset: start });
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError::BadVarint { offset: start })
    }

    /// A varint that must fit in a `u32`.
    pub fn varint_u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let offset = self.offset;
        u32::try_from(self.varint()?).map_err(|_| DecodeError::Invalid { what, offset })
    }

    /// A count that must be possible given the bytes left: each item takes at least
    /// `min_item_bytes` bytes. Guards allocations against absurd lengths.
    pub fn count(&mut self, what: &'static str, min_item_bytes: usize) -> Result<usize, DecodeError> {
        let offset = self.offset;
        let n = usize::try_from(self.varint()?).map_err(|_| DecodeError::Invalid { what, offset })?;
        let needed = n
            .checked_mul(min_item_bytes.max(1))
            .ok_or(DecodeError::Invalid { what, offset })?;
        if needed > self.remaining() {
            return Err(DecodeError::Truncated {
                offset,
                needed,
                available: self.remaining(),
            });
        }
        Ok(n)
    }

    /// A varint length followed by that many bytes of UTF-8.
    pub fn string(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        let offset = self.offset;
        let len = self.count(what, 1)?;
        std::str::from_utf8(self.take(len)?).map_err(|_| DecodeError::Invalid { what, offset })
    }

    /// Fails unless every byte was read.
    pub fn finish(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(DecodeError::Invalid {
                what,
                offset: self.offset,
            })
        }
    }
}

/// Appends an unsigned LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends a varint length and the string's bytes.
pub fn put_string(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varint_known_encodings() {
        let mut out = Vec::new();
        put_varint(&mut out, 0);
        put_varint(&mut out, 127);
        put_varint(&mut out, 128);
        put_varint(&mut out, 300);
        assert_eq!(out, vec![0, 127, 0x80, 1, 0xac, 2]);
    }

    #[test]
    fn overlong_varint_is_an_error() {
        let bytes = [0xffu8; 11];
        assert!(matches!(
            ByteReader::new(&bytes).varint(),
            Err(DecodeError::BadVarint { .. })
        ));
        let mut too_big = vec![0xffu8; 9];
        too_big.push(0x02);
        assert!(matches!(
            ByteReader::new(&too_big).varint(),
            Err(DecodeError::BadVarint { .. })
        ));
    }

    #[test]
    fn counts_larger_than_the_input_are_refused() {
        let mut bytes = Vec::new();
        put_varint(&mut bytes, 1 << 40);
        assert!(matches!(
            ByteReader::new(&bytes).count("items", 4),
            Err(DecodeError::Truncated { .. })
        ));
    }

    proptest! {
        #[test]
        fn varint_round_trips(values in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut out = Vec::new();
            for &v in &values { put_varint(&mut out, v); }
            let mut r = ByteReader::new(&out);
            for &v in &values { prop_assert_eq!(r.varint().unwrap(), v); }
            prop_assert!(r.finish("end").is_ok());
        }

        #[test]
        fn reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut r = ByteReader::new(&bytes);
            let _ = r.string("s");
            let _ = r.varint();
            let _ = r.u64();
            let _ = r.f32();
            let _ = r.count("c", 3);
        }
    }
}
