//! Loaded tensors keep the dtype they were stored in (burn-store builds each one
//! with the snapshot's dtype), so an f32 checkpoint loaded for a bf16 run would
//! stay f32. [`to_backend_float`] casts every float parameter to the backend's
//! float type; for f32 runs of f32 checkpoints it changes nothing.

use burn::module::{ModuleMapper, Param};
use burn::prelude::*;
use burn::tensor::{DType, Element};

struct CastFloats {
    dtype: DType,
}

impl<B: Backend> ModuleMapper<B> for CastFloats {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        // A cast is a new node in the autodiff graph; the parameter must stay a
        // leaf, and one that trained must go on training (`detach` drops that).
        let tensor = if tensor.dtype() == self.dtype {
            tensor
        } else {
            let trains = tensor.is_require_grad();
            let cast = tensor.cast(self.dtype).detach();
            if trains { cast.require_grad() } else { cast }
        };
        Param::from_mapped_value(id, tensor, mapper)
    }
}

pub fn to_backend_float<B: Backend, M: Module<B>>(module: M) -> M {
    module.map(&mut CastFloats { dtype: <B::FloatElem as Element>::dtype() })
}
