//! What each compute op of the block does, counted once for every schedule that issues it: the
//! training program ([`crate::block::program::schedule`]), the serving step
//! ([`crate::labs::serve::step_trace`]) and the vocabulary-parallel pass ([`crate::labs::vocab::events`]).
//! A count is FLOPs and the elements the op reads and writes (the trace's bytes are the elements
//! times the element size); every argument is a per-rank size.

/// GeLU (tanh approximation) FLOPs per element, counting tanh as ~10.
pub const GELU_FLOPS: u64 = 18;

/// The FLOPs an op does and the elements it reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    pub flops: u64,
    pub elems: u64,
}

/// LayerNorm forward on `t` rows of width `h`: mean, variance, normalise, scale, shift (8 FLOPs
/// an element); reads the rows, the weight and the bias, writes the rows.
pub fn layer_norm(t: u64, h: u64) -> Work {
    Work {
        flops: 8 * t * h,
        elems: 2 * t * h + 2 * h,
    }
}

/// LayerNorm backward on `t` rows of width `h`: the input gradient (twice the forward's work)
/// plus the residual gradient added in; reads the output gradient, the input, the weight and
/// the residual gradient, writes the input gradient and the weight and bias gradients.
pub fn layer_norm_backward(t: u64, h: u64) -> Work {
    Work {
        flops: 2 * layer_norm(t, h).flops + t * h,
        elems: 4 * t * h + 4 * h,
    }
}

/// Bias and residual: `y = x + z + b` on `t` rows of width `h`.
pub fn bias_residual(t: u64, h: u64) -> Work {
    Work {
        flops: 2 * t * h,
        elems: 3 * t * h + h,
    }
}

/// A bias gradient: the `t` rows of width `h` summed into one.
pub fn bias_grad(t: u64, h: u64) -> Work {
    Work {
        flops: t * h,
        elems: t * h + h,
    }
}

/// A linear layer `[t, k] · [k, n]`, plus a bias of width `n` when `bias`.
pub fn linear(t: u64, k: u64, n: u64, bias: bool) -> Work {
    let b = u64::from(bias);
    Work {
        flops: 2 * t * k * n + b * t * n,
        elems: t * k + k * n + t * n + b * n,
    }
}

/// A linear layer's backward (`[t, k] · [k, n]`): the input gradient and the weight gradient
/// (two products), plus the bias gradient when `bias`; reads the output gradient, the input and
/// the weight, writes their gradients.
pub fn linear_backward(t: u64, k: u64, n: u64, bias: bool) -> Work {
    let b = u64::from(bias);
    Work {
        flops: 4 * t * k * n + b * t * n,
        elems: 2 * t * k + 2 * t * n + 2 * k * n + b * n,
    }
}

/// GeLU on `t` rows of width `f`.
pub fn gelu(t: u64, f: u64) -> Work {
    Work {
        flops: GELU_FLOPS * t * f,
        elems: 2 * t * f,
    }
}

/// GeLU's backward on `t` rows of width `f`: the derivative (8 FLOPs more than the forward) times
/// the output gradient.
pub fn gelu_backward(t: u64, f: u64) -> Work {
    Work {
        flops: (GELU_FLOPS + 8) * t * f,
        elems: 3 * t * f,
    }
}

/// Attention's FLOPs over `scores` query–key pairs in each of `heads` heads of size `d`: the
/// score and the context products (`2·d` multiply-adds a pair) and the softmax (5 a pair).
pub fn attention_flops(heads: u64, scores: u64, d: u64) -> u64 {
    heads * scores * (4 * d + 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts written out for GPT-2 small's fc1 at TP=4 (t = 128, h = 768, 768 columns a
    /// rank): the forward and backward products and the bias.
    #[test]
    fn linear_counts_the_products_and_the_bias() {
        let (t, h, c) = (128u64, 768u64, 768u64);
        assert_eq!(linear(t, h, c, true).flops, 2 * 128 * 768 * 768 + 128 * 768);
        assert_eq!(
            linear(t, h, c, false).elems,
            128 * 768 + 768 * 768 + 128 * 768
        );
        assert_eq!(
            linear_backward(t, h, c, true).elems,
            2 * 128 * 768 + 2 * 128 * 768 + 2 * 768 * 768 + 768
        );
        assert_eq!(layer_norm_backward(4, 8).flops, 2 * 8 * 32 + 32);
    }
}
