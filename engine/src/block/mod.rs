//! The block as one program: the op vocabulary ([`op::Op`]), the placements every op's tensors
//! have on each rank ([`placement`]), the program itself ([`program::schedule`], which writes
//! the trace), the typed names of its tensors ([`tensor::TensorName`]), the decode step's program
//! ([`decode::program`]), the check that they are consistent ([`check::check_placements`]), the
//! shard plan ([`plan`]), the executors that walk the block's programs and their fused kernels
//! ([`exec`]: one walk for every propagated plan's program, Megatron's included, with fused
//! passes and the precision hook), the
//! plain kernels the labs use ([`ops`]), the plain unsharded reference that is the oracle
//! ([`reference`](mod@reference): it does not share the sharded code path), the verification
//! against it ([`verify`]), and the FLOPs and
//! elements each op does, counted once for every schedule ([`work`]).

pub mod check;
pub mod decode;
pub mod design;
pub mod exec;
pub mod op;
pub mod ops;
pub mod placement;
pub mod plan;
pub mod program;
pub mod reference;
pub mod tensor;
pub mod verify;
pub mod work;

pub use op::{BlockPart, ComputeOp, Conjugate, Op, OpKind, Parallel, Pass, Role};
pub use placement::{Placement, PlacementKind, TensorPlacement};
pub use tensor::{Activation, ServeTensor, TensorName, VocabTensor};
