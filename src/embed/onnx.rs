//! What the ONNX rewrite (`rewrite`) and the int8 operator (`qmatmul`) share: the op type of
//! the node one writes and the other parses, and initializers read as tract tensors.

use tract_onnx::pb;
use tract_onnx::prelude::*;

/// The ONNX op type `rewrite::int8_matmuls` writes and `qmatmul::parse` reads.
pub(super) const INT8_MATMUL_OP: &str = "SextantMatMulInt8";

/// An int8, uint8 or f32 initializer as a tract tensor (`None` for other types).
pub(super) fn proto_tensor(t: &pb::TensorProto) -> TractResult<Option<Tensor>> {
    use pb::tensor_proto::DataType;
    let shape: Vec<usize> = t.dims.iter().map(|&d| usize::try_from(d)).collect::<Result<_, _>>()?;
    let tensor = if t.data_type == DataType::Int8 as i32 {
        let v: Vec<i8> = if t.raw_data.is_empty() {
            t.int32_data.iter().map(|&x| x as i8).collect()
        } else {
            t.raw_data.iter().map(|&b| b as i8).collect()
        };
        tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor()
    } else if t.data_type == DataType::Uint8 as i32 {
        let v: Vec<u8> = if t.raw_data.is_empty() {
            t.int32_data.iter().map(|&x| x as u8).collect()
        } else {
            t.raw_data.clone()
        };
        tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor()
    } else if t.data_type == DataType::Float as i32 {
        let v: Vec<f32> = if t.raw_data.is_empty() {
            t.float_data.clone()
        } else {
            if !t.raw_data.len().is_multiple_of(4) {
                return Ok(None);
            }
            t.raw_data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor()
    } else {
        return Ok(None);
    };
    Ok(Some(tensor))
}
